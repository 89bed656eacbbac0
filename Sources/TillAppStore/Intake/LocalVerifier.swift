import Foundation
import Synchronization
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillLedger
import X509

/// What a submission proved locally: its environment and its transactions.
struct LocallyVerified: Sendable {
    var kind: SubmissionKind
    var environment: AppStoreEnvironment
    var transactions: [PurchaseTransaction]
}

/// Checks receipts and signed transactions in microseconds, before Apple is asked.
///
/// Apple's roots are tried first. Roots configured for the sandbox (the simulator's) are tried only when
/// Apple's fail, and then the data must say it is sandbox data: a production purchase is never believed on
/// anyone's word but Apple's. Data of StoreKit Testing in Xcode (the Xcode and LocalTesting environments) is signed
/// on a developer's machine by one self-signed certificate: it is believed only under the app's
/// `storeKitTestCertificates`, and those certificates vouch for nothing else. Verifiers are kept per app so their
/// chain caches stay warm.
package final class LocalVerifier: Sendable {
    private struct AppVerifiers: Sendable {
        var fingerprint: String
        var storeKitTestCertificates: [String]
        var jws: [SignedDataVerifier]
        /// Verifiers of the Xcode and LocalTesting environments, under the app's StoreKit test certificates alone.
        var locallySigned: [AppStoreEnvironment: SignedDataVerifier]
        var receipts: [ReceiptVerifier]
        var transactionReceipts: [TransactionReceiptVerifier]
    }

    private let configuration: AppStoreSettings
    private let cache = Mutex<[String: AppVerifiers]>([:])
    /// JWS verifiers bound to no app (Apple's roots, then the sandbox roots): for a notification's envelope,
    /// which says which app it is for only once its signature is trusted.
    private let anyApp: [SignedDataVerifier]

    package init(configuration: AppStoreSettings) {
        self.configuration = configuration
        var anyApp = [SignedDataVerifier(.init(anchors: .appleStoreKit))]
        if !configuration.sandboxJWSRoots.isEmpty {
            anyApp.append(SignedDataVerifier(.init(anchors: TrustAnchors(roots: configuration.sandboxJWSRoots))))
        }
        self.anyApp = anyApp
    }

    private func verifiers(for app: ServerApp) -> AppVerifiers {
        let fingerprint = "\(app.bundleId)|\(app.appAppleId ?? 0)"
        if let cached = cache.withLock({ $0[app.bundleId] }), cached.fingerprint == fingerprint,
            cached.storeKitTestCertificates == app.storeKitTestCertificates
        {
            return cached
        }
        var jws = [SignedDataVerifier(.init(anchors: .appleStoreKit, bundleId: app.bundleId))]
        var receipts = [ReceiptVerifier(.init(anchors: .appleReceipts, bundleId: app.bundleId))]
        var transactionReceipts = [TransactionReceiptVerifier(.init(anchors: .appleReceipts, bundleId: app.bundleId))]
        if !configuration.sandboxJWSRoots.isEmpty {
            jws.append(
                SignedDataVerifier(
                    .init(anchors: TrustAnchors(roots: configuration.sandboxJWSRoots), bundleId: app.bundleId)
                )
            )
        }
        if !configuration.sandboxReceiptRoots.isEmpty {
            let anchors = TrustAnchors(
                roots: configuration.sandboxReceiptRoots,
                intermediates: configuration.sandboxReceiptIntermediates
            )
            receipts.append(ReceiptVerifier(.init(anchors: anchors, bundleId: app.bundleId)))
            transactionReceipts.append(TransactionReceiptVerifier(.init(anchors: anchors, bundleId: app.bundleId)))
        }
        var locallySigned: [AppStoreEnvironment: SignedDataVerifier] = [:]
        let storeKitTest = app.storeKitTestCertificates.flatMap { (try? StoreKitTestCertificate.parse($0)) ?? [] }
        if !storeKitTest.isEmpty {
            let anchors = TrustAnchors(roots: storeKitTest.map(\.certificate))
            for environment in [AppStoreEnvironment.xcode, .localTesting] {
                locallySigned[environment] = SignedDataVerifier(
                    .init(anchors: anchors, bundleId: app.bundleId, environment: environment)
                )
            }
        }
        let made = AppVerifiers(
            fingerprint: fingerprint,
            storeKitTestCertificates: app.storeKitTestCertificates,
            jws: jws,
            locallySigned: locallySigned,
            receipts: receipts,
            transactionReceipts: transactionReceipts
        )
        cache.withLock { $0[app.bundleId] = made }
        return made
    }

    /// Verifies one submission for `app`, or throws a 422 with the precise reason.
    func verify(_ input: SubmissionInput, app: ServerApp) async throws -> LocallyVerified {
        let verifiers = verifiers(for: app)
        let verified: LocallyVerified
        switch input {
        case .signedTransaction(let jws):
            verified = try await verifySignedTransaction(jws, verifiers: verifiers, app: app)
        case .appReceipt(let base64):
            verified = try await first(verifiers.receipts.indices) { index in
                await verifiers.receipts[index].verify(base64: base64).map { receipt in
                    guard let environment = receipt.receipt.environment, let bundleId = receipt.receipt.bundleId else {
                        return nil
                    }
                    let transactions = receipt.receipt.inAppPurchases.compactMap {
                        $0.purchaseTransaction(bundleId: bundleId, environment: environment)
                    }
                    return LocallyVerified(kind: .appReceipt, environment: environment, transactions: transactions)
                }
            }
        case .transactionReceipt(let base64):
            verified = try await first(verifiers.transactionReceipts.indices) { index in
                await verifiers.transactionReceipts[index].verify(base64: base64).map { receipt in
                    guard let transaction = try? receipt.purchaseTransaction() else { return nil }
                    return LocallyVerified(
                        kind: .transactionReceipt,
                        environment: receipt.environment,
                        transactions: [transaction]
                    )
                }
            }
        }
        try Self.admit(verified.environment, app: app, of: "purchases")
        return verified
    }

    /// Verifies an app's AppTransaction (StoreKit 2's `AppTransaction.shared`) as a submission's signed transaction
    /// is verified, for the same app and under the same environment policy, or throws a 422 with the precise reason.
    /// In production its app Apple id must be the app's too, when the app has one.
    package func verifyAppTransaction(_ jws: String, app: ServerApp) async throws -> VerifiedAppTransaction {
        let verified = try await verifySignedData(
            jws,
            as: AppTransaction.self,
            verifiers: verifiers(for: app),
            app: app,
            missing: "an environment (receiptType)"
        ) { payload in payload.receiptType.map { VerifiedAppTransaction(payload: payload, environment: $0) } }
        let payload = verified.payload
        let environment = verified.environment
        if environment == .production, let expected = app.appAppleId, payload.appAppleId != expected {
            throw IntakeRefusal(
                .unverified(.invalidAppIdentifier),
                "signed for app Apple id \(payload.appAppleId.map(String.init) ?? "(none)"), expected \(expected)"
            )
        }
        try Self.admit(environment, app: app, of: "app transactions")
        return verified
    }

    /// The app's policy for data of `environment`, once its signature is trusted: StoreKit Testing's data was believed
    /// under the certificates the operator registered for it (that is the app's consent); sandbox data only if the app
    /// accepts it; production always.
    private static func admit(_ environment: AppStoreEnvironment, app: ServerApp, of what: String) throws {
        if environment.isLocallySigned || environment == .production { return }
        guard app.acceptSandbox else {
            throw IntakeRefusal(
                .sandboxNotAccepted,
                "\(app.bundleId) does not accept \(environment) \(what)"
            )
        }
        guard environment == .sandbox else {
            throw IntakeRefusal(
                .invalidEnvironment,
                "\(environment) \(what) are not accepted by a server"
            )
        }
    }

    /// A signed transaction: under Apple's roots, then the sandbox roots, then (StoreKit Testing's) the app's StoreKit
    /// test certificates.
    private func verifySignedTransaction(_ jws: String, verifiers: AppVerifiers, app: ServerApp) async throws
        -> LocallyVerified
    {
        try await verifySignedData(
            jws,
            as: JWSTransactionDecodedPayload.self,
            verifiers: verifiers,
            app: app,
            missing: "a transaction id, product id, date or environment"
        ) { payload in
            payload.purchaseTransaction().map { transaction in
                LocallyVerified(
                    kind: .signedTransaction,
                    environment: transaction.environment,
                    transactions: [transaction]
                )
            }
        }
    }

    /// Signed data of an app (a transaction, its AppTransaction): under Apple's roots, then the sandbox roots; when
    /// neither has a chain for it and it says it is StoreKit Testing's, under the app's StoreKit test certificates
    /// alone. `read` makes the value of a verified payload, nil when the payload lacks what it needs (`missing`).
    private func verifySignedData<Payload: JWSPayload, Value: Sendable & EnvironmentScoped>(
        _ jws: String,
        as type: Payload.Type,
        verifiers: AppVerifiers,
        app: ServerApp,
        missing: String,
        read: (Payload) -> Value?
    ) async throws -> Value {
        func attempt(_ verifier: SignedDataVerifier) async -> VerificationOutcome<Value?> {
            await verifier.verify(jws, as: Payload.self).map { read($0.payload) }
        }
        do {
            return try await first(verifiers.jws.indices, missing: missing) { await attempt(verifiers.jws[$0]) }
        } catch let refusal as IntakeRefusal
            where refusal.reason == .unverified(.invalidChainLength) || refusal.reason == .unverified(.invalidChain)
        {
            // No chain to Apple or the sandbox roots. StoreKit Testing in Xcode signs with one self-signed certificate;
            // what the payload claims only chooses the verifier, which checks everything again.
            guard let claimed = Self.claimedEnvironment(of: jws), claimed.isLocallySigned else { throw refusal }
            guard let verifier = verifiers.locallySigned[claimed] else {
                throw IntakeRefusal(
                    .storeKitTestingNotEnabled,
                    "this is \(claimed) data, signed by StoreKit Testing in Xcode; to accept it, register the project's "
                        + "certificate (Xcode: Editor → Save Public Certificate) with PATCH /admin/v1/apps/\(app.bundleId) "
                        + "{\"storeKitTestCertificates\":[\"<PEM>\"]}"
                )
            }
            switch await attempt(verifier) {
            case .valid(let verified?):
                return verified
            case .valid(nil):
                throw IntakeRefusal(.malformedPayload, "the signed data lacks \(missing)")
            case .invalid(let failure) where failure.reason == .invalidChain:
                throw IntakeRefusal(
                    .unverified(failure.reason),
                    "not signed by a StoreKit test certificate of \(app.bundleId): \(failure.detail)"
                )
            case .invalid(let failure):
                throw IntakeRefusal(.unverified(failure.reason), failure.detail)
            }
        }
    }

    /// The environment a JWS's payload claims, unverified: only to choose who verifies it.
    private static func claimedEnvironment(of jws: String) -> AppStoreEnvironment? {
        // A transaction names it `environment`, an AppTransaction `receiptType`.
        struct Claim: Decodable {
            var environment: String?
            var receiptType: String?
        }
        let segments = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3, let payload = Base64.decode(segments[1], alphabet: .url),
            let claim = try? JSONDecoder().decode(Claim.self, from: Data(payload)),
            let environment = claim.environment ?? claim.receiptType
        else { return nil }
        return AppStoreEnvironment(environment)
    }

    /// Verifies App Store signed data (a notification, a transaction, renewal info) with the rules of submissions:
    /// Apple's roots first; the sandbox roots only when Apple's refuse the chain, and then only for data that
    /// says it is not production. With `app`, the data must also be signed for that app; without, only the
    /// chain and the signature are checked.
    func verifySigned<Payload: JWSPayload>(_ jws: String, as type: Payload.Type, app: ServerApp?) async
        -> VerificationOutcome<Payload>
    {
        let verifiers = app.map { self.verifiers(for: $0).jws } ?? anyApp
        var chainFailure: VerificationFailure?
        for (index, verifier) in verifiers.enumerated() {
            switch await verifier.verify(jws, as: Payload.self) {
            case .valid(let verified):
                let environment = verified.payload.identity.environment
                if let environment, environment.isLocallySigned {
                    return .invalid(
                        VerificationFailure(
                            .untrustedForXcode,
                            "only an app's StoreKit test certificates vouch for \(environment) data"
                        )
                    )
                }
                if index > 0 && (environment == nil || environment == .production) {
                    return .invalid(
                        VerificationFailure(
                            .untrustedForProduction,
                            "only Apple's roots vouch for \(environment?.rawValue ?? "unlabelled") data"
                        )
                    )
                }
                return .valid(verified.payload)
            case .invalid(let failure) where failure.reason == .invalidChain:
                chainFailure = chainFailure ?? failure
            case .invalid(let failure):
                return .invalid(failure)
            }
        }
        return .invalid(chainFailure ?? VerificationFailure(.invalidFormat, "nothing to verify"))
    }

    /// Tries each verifier in turn (Apple's first); a later one (sandbox roots) only vouches for sandbox data.
    private func first<Value: EnvironmentScoped & Sendable>(
        _ indices: Range<Int>,
        missing: String = "a transaction id, product id, date or environment",
        _ attempt: (Int) async -> VerificationOutcome<Value?>
    ) async throws -> Value {
        var chainFailure: VerificationFailure?
        for index in indices {
            switch await attempt(index) {
            case .valid(let verified?) where verified.environment.isLocallySigned:
                throw IntakeRefusal(
                    .untrustedForXcode,
                    "only an app's StoreKit test certificates vouch for \(verified.environment) data"
                )
            case .valid(let verified?):
                if index > 0 && verified.environment != .sandbox {
                    throw IntakeRefusal(
                        .untrustedForProduction,
                        "only Apple's roots vouch for \(verified.environment) data"
                    )
                }
                return verified
            case .valid(nil):
                throw IntakeRefusal(.malformedPayload, "the signed data lacks \(missing)")
            case .invalid(let failure) where failure.reason == .invalidChain:
                // Only a chain Apple does not vouch for is worth trying against the sandbox roots.
                chainFailure = chainFailure ?? failure
            case .invalid(let failure):
                throw IntakeRefusal(.unverified(failure.reason), failure.detail)
            }
        }
        let failure = chainFailure ?? VerificationFailure(.invalidFormat, "nothing to verify")
        throw IntakeRefusal(.unverified(failure.reason), failure.detail)
    }
}

/// A value verified locally, in the environment its signed data names.
protocol EnvironmentScoped {
    var environment: AppStoreEnvironment { get }
}

extension LocallyVerified: EnvironmentScoped {}

/// A verified AppTransaction and the environment its `receiptType` names.
package struct VerifiedAppTransaction: EnvironmentScoped, Sendable {
    package var payload: AppTransaction
    package var environment: AppStoreEnvironment
}

/// What an app submits.
enum SubmissionInput: Sendable {
    case appReceipt(String)
    case transactionReceipt(String)
    case signedTransaction(String)

    var kind: SubmissionKind {
        switch self {
        case .appReceipt: .appReceipt
        case .transactionReceipt: .transactionReceipt
        case .signedTransaction: .signedTransaction
        }
    }

    var payload: String {
        switch self {
        case .appReceipt(let text), .transactionReceipt(let text), .signedTransaction(let text): text
        }
    }

    /// The request's field that carried it (`SubmissionRequest`).
    var field: String {
        switch self {
        case .appReceipt: "receipt"
        case .transactionReceipt: "transactionReceipt"
        case .signedTransaction: "signedTransaction"
        }
    }
}

extension VerificationOutcome {
    func map<T: Sendable>(_ transform: (Value) -> T) -> VerificationOutcome<T> {
        switch self {
        case .valid(let value): .valid(transform(value))
        case .invalid(let failure): .invalid(failure)
        }
    }
}

extension VerificationFailure.Reason {
    /// Valid only under the sandbox roots, yet claiming to be production data.
    static let untrustedForProduction = VerificationFailure.Reason(rawValue: "untrustedForProduction")
    /// Valid under Apple's or the sandbox roots, yet claiming to be StoreKit Testing's (Xcode, LocalTesting).
    static let untrustedForXcode = VerificationFailure.Reason(rawValue: "untrustedForXcode")
}
