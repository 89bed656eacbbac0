import Foundation

/// Sends the app's AppTransaction to the server once per customer, and remembers on disk that it did.
///
/// StoreKit 2's `AppTransaction.shared` says who bought or downloaded the app, when and which version first. The
/// server verifies it and keeps it for the customer (`PUT /v1/customers/{id}/app-transaction`); one send per customer
/// is enough, so the outcome is written to ``directory`` (`sent.json`, atomically) and a relaunch sends nothing:
///
/// - acknowledged (2xx): recorded as sent for this customer and this AppTransaction;
/// - refused for good (a 4xx the server will answer again, such as `422 invalidAppIdentifier`): recorded as refused, so
///   a relaunch does not send it again either; ``PurchaseCoordinator/sendAppTransaction(force:)`` sends it anyway
///   once the cause is fixed (say, the operator registered the StoreKit test certificate);
/// - not sent (the store could not be read, the server unreachable, a timeout, a 5xx, a 429, a 401…): nothing is
///   recorded, and it is sent again at the next launch and by ``PurchaseCoordinator/retry()``, after ``backoff``.
///
/// It is sent again when the customer changes (another account signed in to the app) or the AppTransaction does (its
/// `appTransactionID` differs: another Apple Account on the device). Only the latest customer's outcome is kept.
public actor AppTransactionRecorder {
    public nonisolated let directory: URL
    public nonisolated let backoff: Backoff
    private let server: TillServerClient
    private let now: @Sendable () -> Date
    private var recorded: RecordedAppTransaction?
    /// The send in progress, which a second caller waits for instead of sending twice.
    private var inFlight: Task<AppTransactionDelivery, Never>?
    /// Failed attempts since the last success, and when the next one is due (this run only: a launch always tries).
    private var failures = 0
    private var notBefore: Date?
    private var lastFailure: AppTransactionDelivery?

    private var file: URL { directory.appendingPathComponent("sent.json") }

    /// Opens (or creates) the record in `directory`.
    public init(
        directory: URL,
        server: TillServerClient,
        backoff: Backoff = Backoff(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        self.directory = directory
        self.server = server
        self.backoff = backoff
        self.now = now
        try DurableFiles.createDirectory(directory)
        DurableFiles.removeLeftovers(in: directory)
        recorded = DurableFiles.read(directory.appendingPathComponent("sent.json")).flatMap {
            try? JSONDecoder().decode(RecordedAppTransaction.self, from: Data($0))
        }
    }

    /// What was last recorded: the customer, the AppTransaction's id, and whether the server took it or refused it.
    public var record: RecordedAppTransaction? { recorded }

    /// Sends the AppTransaction `read` gives for `customerId`, unless it was sent (or refused for good) for that
    /// customer and AppTransaction already, or (`includingNotDue` false) an earlier failure's backoff is not over.
    /// `force` sends it whatever was recorded.
    func send(
        customerId: String,
        force: Bool = false,
        includingNotDue: Bool = true,
        read: @escaping @Sendable () async throws -> StoreVerification<StoreAppTransaction>?
    ) async -> AppTransactionDelivery {
        if let inFlight { return await inFlight.value }
        if !includingNotDue, !force, let notBefore, now() < notBefore, let lastFailure { return lastFailure }
        let task = Task { await self.attempt(customerId: customerId, force: force, read: read) }
        inFlight = task
        let delivery = await task.value
        inFlight = nil
        return delivery
    }

    private func attempt(
        customerId: String,
        force: Bool,
        read: @Sendable () async throws -> StoreVerification<StoreAppTransaction>?
    ) async -> AppTransactionDelivery {
        let verification: StoreVerification<StoreAppTransaction>?
        do {
            verification = try await read()
        } catch {
            // Recorded for this customer already: the record stands whatever the store says today.
            if !force, let recorded, recorded.customerId == customerId { return recorded.delivery }
            if let error = error as? StoreError { return failed(.storeFailed(error)) }
            // The simulator's device API could not be reached.
            return failed(.willRetry(error as? TillClientError ?? TillClientError(.unreachable, message: "\(error)")))
        }
        guard let verification else { return .unavailable }
        let appTransaction = verification.unsafePayloadValue
        if !force, let recorded, recorded.customerId == customerId,
            recorded.appTransactionId == appTransaction.appTransactionId
        {
            return recorded.delivery
        }
        guard case .verified(let verified) = verification else {
            // StoreKit could not verify it on this device; the server would not either. Read again next time.
            return .unverified(verification.verificationError ?? StoreVerificationError(.unknown))
        }
        let answer: ServerAppTransaction
        do {
            answer = try await server.recordAppTransaction(
                customerId: customerId,
                signedAppTransaction: verified.signedAppTransaction
            )
        } catch let error as TillClientError {
            guard error.isPermanentRefusal else { return failed(.willRetry(error)) }
            remember(
                RecordedAppTransaction(customerId: customerId, appTransaction: verified, refusal: error, at: now())
            )
            return .refused(error)
        } catch {
            return failed(.willRetry(TillClientError(.unreachable, message: "cancelled before an answer")))
        }
        remember(RecordedAppTransaction(customerId: customerId, appTransaction: verified, refusal: nil, at: now()))
        return .sent(answer)
    }

    /// A failure a retry can fix: nothing is recorded, and the next retry waits for the backoff.
    private func failed(_ delivery: AppTransactionDelivery) -> AppTransactionDelivery {
        failures += 1
        notBefore = now().addingTimeInterval(backoff.delay(afterAttempts: failures))
        lastFailure = delivery
        return delivery
    }

    private func remember(_ record: RecordedAppTransaction) {
        failures = 0
        notBefore = nil
        lastFailure = nil
        recorded = record
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Not written (a full disk): the next launch sends it again, which the server answers the same.
        if let bytes = try? encoder.encode(record) { try? DurableFiles.write(Array(bytes), to: file) }
    }
}

/// The outcome of sending the AppTransaction for a customer, as ``AppTransactionRecorder`` keeps it on disk.
public struct RecordedAppTransaction: Sendable, Hashable, Codable {
    /// The file format's version.
    public var version: Int = 1
    public var customerId: String
    /// The AppTransaction's `appTransactionID` (nil before iOS 18.4 signs one).
    public var appTransactionId: String?
    /// When the server answered (UNIX milliseconds).
    public var answeredAt: Int64
    /// Nil when the server took it; otherwise its refusal.
    public var refusedStatus: Int?
    public var refusedCode: String?
    public var refusedMessage: String?

    init(customerId: String, appTransaction: StoreAppTransaction, refusal: TillClientError?, at date: Date) {
        self.customerId = customerId
        appTransactionId = appTransaction.appTransactionId
        answeredAt = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        refusedStatus = refusal?.status
        refusedCode = refusal?.code
        refusedMessage = refusal?.message
    }

    /// Whether the server took it.
    public var wasSent: Bool { refusedStatus == nil && refusedCode == nil }

    /// What a send that finds this record answers.
    var delivery: AppTransactionDelivery {
        guard !wasSent else { return .alreadySent }
        return .refused(
            TillClientError(.refused, status: refusedStatus, code: refusedCode, message: refusedMessage ?? "refused")
        )
    }
}

/// What became of the AppTransaction at launch (``LaunchReport/appTransaction``) or at a send.
public enum AppTransactionDelivery: Sendable, Hashable {
    /// The server verified and recorded it. Its answer is the AppTransaction it keeps for the customer: this one, or
    /// one the App Store signed later that another device sent.
    case sent(ServerAppTransaction)
    /// Sent for this customer (or refused for good) by an earlier launch: nothing was sent now.
    case alreadySent
    /// The store has no AppTransaction: StoreKit 1, or StoreKit 2 before iOS 16, macOS 13, tvOS 16, watchOS 9.
    case unavailable
    /// StoreKit could not verify it on the device: not sent, and read again at the next launch.
    case unverified(StoreVerificationError)
    /// The store could not give it now (no network, a system error): tried again later.
    case storeFailed(StoreError)
    /// The server could not be reached, or answered an error a retry can fix (a timeout, a 5xx, a 429, a 401):
    /// tried again at the next launch and by ``PurchaseCoordinator/retry()``.
    case willRetry(TillClientError)
    /// The server refused it for good (`422` with the verifier's code: `invalidAppIdentifier`, `sandboxNotAccepted`,
    /// `storeKitTestingNotEnabled`, …): recorded, and not sent again for this customer unless forced.
    case refused(TillClientError)
}
