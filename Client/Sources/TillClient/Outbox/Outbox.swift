import Crypto
import Foundation

/// Submissions kept on disk until the server has acknowledged them.
///
/// Every submission is written before its first attempt (write-ahead), so a process killed at any instant —
/// before sending, while the request is in flight, before the answer is read — still has it at the next launch.
/// Each entry keeps its idempotency key and its exact bytes: the server answers a resend of them with the
/// submission it already recorded, so nothing reaches the ledger twice.
///
/// Layout of ``directory``:
///
///     pending/<name>.json    an OutboxEntry, replaced atomically after each failed attempt
///     rejected/<name>.json   a RejectedSubmission: the server said it will never succeed
///
/// where `<name>` is the first 20 bytes of the SHA-256 of the idempotency key, in hex (`name(of:)`).
///
/// An entry leaves `pending` only on a 2xx (removed) or a permanent 4xx (moved to `rejected`); an unreachable
/// server, a timeout, a 5xx or a 429 keep it, with its next attempt pushed back by ``backoff``.
public actor Outbox {
    public nonisolated let directory: URL
    public nonisolated let backoff: Backoff
    private let server: TillServerClient
    private let now: @Sendable () -> Date
    private var entries: [String: OutboxEntry] = [:]
    private var rejections: [String: RejectedSubmission] = [:]
    /// Keys being sent now, with the callers waiting for that same attempt.
    private var inFlight: [String: [CheckedContinuation<OutboxDelivery, Never>]] = [:]

    private var pendingDirectory: URL { directory.appendingPathComponent("pending", isDirectory: true) }
    private var rejectedDirectory: URL { directory.appendingPathComponent("rejected", isDirectory: true) }

    /// Opens (or creates) the outbox in `directory` and reads what an earlier run left in it.
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
        let pending = directory.appendingPathComponent("pending", isDirectory: true)
        let rejected = directory.appendingPathComponent("rejected", isDirectory: true)
        try DurableFiles.createDirectory(pending)
        try DurableFiles.createDirectory(rejected)
        DurableFiles.removeLeftovers(in: pending)
        DurableFiles.removeLeftovers(in: rejected)
        let decoder = JSONDecoder()
        for (name, bytes) in Self.files(in: rejected) {
            if let rejection = try? decoder.decode(RejectedSubmission.self, from: Data(bytes)) {
                rejections[name] = rejection
            }
        }
        for (name, bytes) in Self.files(in: pending) {
            guard let entry = try? decoder.decode(OutboxEntry.self, from: Data(bytes)) else { continue }
            // Killed between writing the rejection and removing the entry: the rejection stands.
            if rejections[name] != nil {
                try? DurableFiles.remove(pending.appendingPathComponent(name + ".json"))
                continue
            }
            entries[name] = entry
        }
    }

    // MARK: Reading

    /// The submissions waiting, oldest first.
    public var pending: [OutboxEntry] {
        entries.values.sorted { ($0.createdAt, $0.idempotencyKey) < ($1.createdAt, $1.idempotencyKey) }
    }

    /// The submissions the server refused for good, oldest first.
    public var rejected: [RejectedSubmission] { rejections.values.sorted { $0.rejectedAt < $1.rejectedAt } }

    public func entry(idempotencyKey: String) -> OutboxEntry? { entries[Self.name(of: idempotencyKey)] }

    /// The waiting submission carrying store transaction `transactionId`, if there is one.
    public func entry(transactionId: String) -> OutboxEntry? {
        entries.values.first { $0.transactionId == transactionId }
    }

    /// The rejection of a submission carrying store transaction `transactionId`, if there is one.
    public func rejection(transactionId: String) -> RejectedSubmission? {
        rejections.values.first { $0.entry.transactionId == transactionId }
    }

    /// When the earliest waiting submission is due, or nil when none waits.
    public var nextAttemptDate: Date? {
        entries.values.map(\.nextAttemptAt).min().map { Date(timeIntervalSince1970: Double($0) / 1000) }
    }

    // MARK: Writing and sending

    /// Writes a submission durably, unless one with the same idempotency key is already waiting (that one is
    /// kept, with its bytes). Returns the entry that waits.
    @discardableResult
    public func enqueue(_ entry: OutboxEntry) throws -> OutboxEntry {
        let name = Self.name(of: entry.idempotencyKey)
        if let existing = entries[name] { return existing }
        try save(entry, as: name)
        entries[name] = entry
        return entry
    }

    /// Writes a submission durably and sends it at once: the usual way to submit a purchase.
    public func submit(_ entry: OutboxEntry) async throws -> (OutboxEntry, OutboxDelivery) {
        let waiting = try enqueue(entry)
        return (waiting, await send(idempotencyKey: waiting.idempotencyKey))
    }

    /// Sends one waiting submission now, whether or not it is due. When it is already being sent, waits for
    /// that attempt's outcome instead of sending it twice.
    public func send(idempotencyKey: String) async -> OutboxDelivery {
        let name = Self.name(of: idempotencyKey)
        if inFlight[name] != nil {
            return await withCheckedContinuation { inFlight[name, default: []].append($0) }
        }
        guard let entry = entries[name] else {
            if let rejection = rejections[name] {
                return .rejected(
                    TillClientError(
                        .refused,
                        status: rejection.status,
                        code: rejection.code,
                        message: rejection.message
                    )
                )
            }
            return .queued(TillClientError(.fileSystem, message: "no outbox entry for key \(idempotencyKey)"))
        }
        inFlight[name] = []
        let delivery = await attempt(entry, name: name)
        for waiter in inFlight.removeValue(forKey: name) ?? [] { waiter.resume(returning: delivery) }
        return delivery
    }

    /// Sends every waiting submission that is due (every one with `includingNotDue`, as at launch), oldest
    /// first, and answers what became of each.
    @discardableResult
    public func flush(includingNotDue: Bool = false) async -> [(entry: OutboxEntry, delivery: OutboxDelivery)] {
        let nowMilliseconds = Self.milliseconds(now())
        var results: [(entry: OutboxEntry, delivery: OutboxDelivery)] = []
        for entry in pending where includingNotDue || entry.nextAttemptAt <= nowMilliseconds {
            if Task.isCancelled { break }
            results.append((entry, await send(idempotencyKey: entry.idempotencyKey)))
        }
        return results
    }

    /// Puts a rejected submission back into `pending`, to be sent again (after the cause was fixed).
    public func retryRejected(idempotencyKey: String) throws {
        let name = Self.name(of: idempotencyKey)
        guard var entry = rejections[name]?.entry else { return }
        entry.nextAttemptAt = Self.milliseconds(now())
        try save(entry, as: name)
        entries[name] = entry
        try DurableFiles.remove(rejectedDirectory.appendingPathComponent(name + ".json"))
        rejections[name] = nil
    }

    // MARK: Internals

    private func attempt(_ entry: OutboxEntry, name: String) async -> OutboxDelivery {
        let error: TillClientError
        do {
            let answer = try await server.submit(
                entry.evidence,
                customerId: entry.customerId,
                idempotencyKey: entry.idempotencyKey
            )
            do {
                try DurableFiles.remove(pendingDirectory.appendingPathComponent(name + ".json"))
            } catch {
                // The server has it; a resend under the same key is answered with the same submission.
            }
            entries[name] = nil
            return .acknowledged(answer)
        } catch let failure as TillClientError {
            error = failure
        } catch {
            // Cancelled: the entry stays as it is, for the next run.
            return .queued(TillClientError(.unreachable, message: "cancelled before an answer"))
        }
        if error.isPermanentRefusal {
            let rejection = RejectedSubmission(
                entry: entry,
                rejectedAt: Self.milliseconds(now()),
                status: error.status,
                code: error.code,
                message: error.message
            )
            do {
                try DurableFiles.write(
                    Self.encode(rejection),
                    to: rejectedDirectory.appendingPathComponent(name + ".json")
                )
                try DurableFiles.remove(pendingDirectory.appendingPathComponent(name + ".json"))
                entries[name] = nil
                rejections[name] = rejection
            } catch {
                return .queued(error)
            }
            return .rejected(error)
        }
        var updated = entry
        updated.attempts += 1
        updated.lastError = error.description
        updated.nextAttemptAt =
            Self.milliseconds(now()) + Int64(backoff.delay(afterAttempts: updated.attempts) * 1000)
        // Not saving the new schedule loses nothing: the entry on disk is still there, due a little early.
        try? save(updated, as: name)
        entries[name] = updated
        return .queued(error)
    }

    private func save(_ entry: OutboxEntry, as name: String) throws(TillClientError) {
        try DurableFiles.write(Self.encode(entry), to: pendingDirectory.appendingPathComponent(name + ".json"))
    }

    private static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array((try? encoder.encode(value)) ?? Data())
    }

    /// Files are named after a hash of the key: any key makes a safe, fixed-length name.
    static func name(of key: String) -> String {
        SHA256.hash(data: Array(key.utf8)).prefix(20).map { String(format: "%02x", $0) }.joined()
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }

    private static func files(in directory: URL) -> [(String, [UInt8])] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.compactMap { file in
            DurableFiles.read(directory.appendingPathComponent(file)).map { (String(file.dropLast(5)), $0) }
        }
    }
}
