import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import SQLKit
import Synchronization

/// What every use of the database passes through when storage fails: the failure becomes a
/// ``StorageUnavailable``, the caller waits for storage to come back for a bounded time (`wait`), retrying what is
/// safe to retry, and an outage is logged once, as an episode with a start and an end, not once per request.
///
/// Safe to retry is what certainly changed nothing: a transaction that failed before its COMMIT (or any SQLite
/// transaction: a failed COMMIT leaves nothing behind), a read, a statement that never reached the server. A write
/// whose connection was lost under way (`outcomeUnknown`) is not retried: the caller answers 503, and the client's
/// resend (with its idempotency key) finds out.
///
/// An episode ends at the next success of the kind that failed: any success after a lost server, a commit that wrote
/// after a full or read-only disk (reads go on working while the disk is full, and must not end it; nor does a
/// transaction that changed no row, such as a queue's claim when nothing is due: its commit writes nothing).
public final class StorageGate: Sendable {
    /// How long one operation waits for storage to come back before it gives up with `StorageUnavailable`.
    public let wait: Duration
    private let logger: Logger
    private let state = Mutex(State())
    /// Whether an episode is open: read without the lock by every successful operation.
    private let inEpisode = Atomic<Bool>(false)

    struct Episode {
        var started: ContinuousClock.Instant
        var reason: StorageUnavailable.Reason
        var writeSide: Bool
        var failures = 0
        var refused = 0
    }

    struct State {
        var episode: Episode?
        var episodes = 0
        var refused = 0
    }

    /// Where storage stands, for `/metrics`.
    public struct Status: Sendable {
        /// False during an episode.
        public var available: Bool
        /// Episodes begun since the process started.
        public var episodes: Int
        /// Operations that gave up with `StorageUnavailable` (each answered 503 if it was a request).
        public var refused: Int
        /// The current episode's reason.
        public var reason: StorageUnavailable.Reason?
    }

    public init(wait: Duration, logger: Logger) {
        self.wait = wait
        self.logger = logger
    }

    public var status: Status {
        state.withLock {
            Status(
                available: $0.episode == nil,
                episodes: $0.episodes,
                refused: $0.refused,
                reason: $0.episode?.reason
            )
        }
    }

    /// Runs `attempt`, again while storage is unavailable and the failure is safe to retry (`retryable`), until it
    /// succeeds, fails otherwise, or `wait` has passed; then throws `StorageUnavailable`.
    ///
    /// - Parameters:
    ///   - writes: whether success proves that writes work (ends a full-disk episode).
    ///   - retryable: whether a failure is safe to run again; `outcomeUnknown` never is.
    func run<Result>(
        writes: Bool,
        retryable: (StorageUnavailable) -> Bool = { _ in true },
        _ attempt: () async throws -> Result
    ) async throws -> Result {
        try await run(writes: { _ in writes }, retryable: retryable, attempt)
    }

    /// `run`, where the result tells whether the attempt wrote (a commit that changed rows).
    func run<Result>(
        writes: (Result) -> Bool,
        retryable: (StorageUnavailable) -> Bool = { _ in true },
        _ attempt: () async throws -> Result
    ) async throws -> Result {
        let clock = ContinuousClock()
        let deadline = clock.now + wait
        var pause = Duration.milliseconds(25)
        while true {
            do {
                let result = try await attempt()
                succeeded(writes: writes(result))
                return result
            } catch {
                guard let failure = StorageUnavailable.classify(error) else { throw error }
                failed(failure)
                guard failure.reason != .outcomeUnknown, retryable(failure), clock.now + pause < deadline else {
                    refuse()
                    throw failure
                }
                do {
                    try await Task.sleep(for: pause)
                } catch {
                    refuse()
                    throw failure
                }
                pause = min(pause * 2, .seconds(1))
            }
        }
    }

    private func failed(_ failure: StorageUnavailable) {
        let started = state.withLock { state -> Bool in
            if state.episode != nil {
                state.episode?.failures += 1
                return false
            }
            state.episode = Episode(
                started: ContinuousClock.now,
                reason: failure.reason,
                writeSide: failure.isWriteSide,
                failures: 1
            )
            state.episodes += 1
            inEpisode.store(true, ordering: .relaxed)
            return true
        }
        if started {
            logger.error(
                "storage unavailable: \(failure.detail); requests wait up to \(wait) for it, then get 503 storageUnavailable",
                metadata: ["reason": "\(failure.reason.rawValue)"]
            )
        }
    }

    private func refuse() {
        state.withLock {
            $0.refused += 1
            $0.episode?.refused += 1
        }
    }

    private func succeeded(writes: Bool) {
        // The common case, storage fine, reads one flag and returns.
        guard inEpisode.load(ordering: .relaxed) else { return }
        let ended = state.withLock { state -> Episode? in
            guard let episode = state.episode, writes || !episode.writeSide else { return nil }
            state.episode = nil
            inEpisode.store(false, ordering: .relaxed)
            return episode
        }
        guard let ended else { return }
        let lasted = ContinuousClock.now - ended.started
        // At the start's level or near it, so that whoever saw the outage begin sees it end.
        logger.warning(
            "storage available again after \(lasted) (\(ended.reason.rawValue)): \(ended.failures) failed operations, \(ended.refused) refused with 503"
        )
    }
}

/// `TillDatabase.sql`: each statement and session through the `StorageGate`. A statement is run again while
/// storage is away when running it again cannot repeat anything: no row was delivered yet, and the failure was not
/// a connection lost under way (`outcomeUnknown`). A session is run again only when it failed before it began.
struct GatedSQLDatabase: AsyncSQLDatabase {
    let inner: any SQLDatabase
    let gate: StorageGate

    var eventLoop: any EventLoop { inner.eventLoop }
    var dialect: any SQLDialect { inner.dialect }
    var version: (any SQLDatabaseReportedVersion)? { inner.version }
    var logger: Logger { inner.logger }
    var queryLogLevel: Logger.Level? { inner.queryLogLevel }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        let delivered = NIOLockedValueBox(false)
        try await gate.run(writes: false, retryable: { _ in !delivered.withLockedValue { $0 } }) {
            try await inner.execute(sql: query) { row in
                delivered.withLockedValue { $0 = true }
                onRow(row)
            }
        }
    }

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        let began = NIOLockedValueBox(false)
        return try await gate.run(writes: false, retryable: { _ in !began.withLockedValue { $0 } }) {
            try await inner.withSession { session in
                began.withLockedValue { $0 = true }
                return try await closure(session)
            }
        }
    }
}
