import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import SQLKit
import ServiceLifecycle
import Synchronization
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

/// The confirmation queue: submissions waiting for Apple's word. It claims what is due (several servers may share
/// it on PostgreSQL), asks Apple (`AppleQuestions`), and settles each attempt: confirmed (the ledger records Apple's
/// answer), retried on the configured schedule, dead-lettered after the last attempt, or rejected (the ledger takes
/// back what the local check granted). `ConfirmationWorker` runs it.
public final class ConfirmationQueue: Sendable {
    let configuration: ServerConfiguration
    let database: TillDatabase
    let store: ServerStore
    let catalogue: Catalogue
    let ledger: Ledger
    let intake: Intake
    let questions: AppleQuestions
    let signals: QueueSignals
    let metrics: ServerMetrics
    let clock: ServerClock
    let logger: Logger
    /// Set when Apple stopped answering (timeouts, resets, 5xx); the first real answer after it brings the
    /// submissions that wait for their back-off forward (see `appleIsBack()`).
    let appleUnavailable = Mutex(false)
    /// When Apple came back with a backlog: the worker's concurrency starts small then doubles each second,
    /// so confirming the backlog does not take the CPU that acknowledging new purchases needs.
    let recoveringSince = Mutex<ContinuousClock.Instant?>(nil)
    /// How fast the worker may start confirmation attempts (see `ConfirmationPacer`).
    let pacer: ConfirmationPacer

    init(
        configuration: ServerConfiguration,
        database: TillDatabase,
        store: ServerStore,
        catalogue: Catalogue,
        ledger: Ledger,
        intake: Intake,
        verifier: LocalVerifier,
        signals: QueueSignals,
        metrics: ServerMetrics,
        clock: ServerClock,
        logger: Logger
    ) {
        self.configuration = configuration
        self.database = database
        self.store = store
        self.catalogue = catalogue
        self.ledger = ledger
        self.intake = intake
        self.questions = AppleQuestions(store: store, verifier: verifier, metrics: metrics)
        self.signals = signals
        self.metrics = metrics
        self.clock = clock
        self.logger = logger
        self.pacer = ConfirmationPacer(
            .init(
                busy: configuration.confirmation.busyCPUShare,
                longestDelay: configuration.confirmation.longestPacingDelay
            )
        )
    }

    /// Confirmation attempts a second the pacer allows now.
    public var pace: Double { pacer.rate }

    /// Claims due submissions for this process: pending or retrying, due, and not claimed by a live worker.
    /// On PostgreSQL several servers share the queue (`FOR UPDATE SKIP LOCKED`); on SQLite one process owns it.
    func claimDueSubmissions(limit: Int, leaseSeconds: Int64) async throws -> [SubmissionRecord] {
        guard limit > 0 else { return [] }
        let now = clock.milliseconds
        let until = now + leaseSeconds * 1000
        return try await database.transaction(bookkeeping: true) { db in
            try await self.store.claimDue(limit: limit, now: now, until: until, engine: self.database.engine, on: db)
        }
    }

    /// One confirmation attempt: asks Apple and records the outcome. With a pacer, each answer waits for its
    /// turn before it is read (`ConfirmationPacer.answer()`).
    func confirm(_ submission: SubmissionRecord, client: AppleClient, pacer: ConfirmationPacer? = nil) async {
        do {
            guard
                let app = try await catalogue.cachedApp(bundleId: submission.bundleId)
            else { return }
            let clock = ContinuousClock()
            let start = clock.now
            let outcome = await questions.ask(client, about: submission, app: app, pacer: pacer)
            let result = try await settle(submission, outcome: outcome, app: app)
            metrics.confirmation(result: result.rawValue, status: outcome.status, duration: clock.now - start)
            // Waiters (`?wait=`) wake once the attempt is settled and counted: what they read next includes it.
            signals.submissionSettled.signal()
            if outcome.meansAppleIsUnavailable {
                appleUnavailable.withLock { $0 = true }
            } else if outcome.isAppleAnswer,
                appleUnavailable.withLock({ wasDown in
                    defer { wasDown = false }; return wasDown
                })
            {
                try await appleIsBack()
            }
        } catch {
            logger.error("confirmation of \(submission.id) failed: \(error)")
        }
    }

    /// Apple answers again after an outage: submissions waiting out a back-off because Apple could not be
    /// reached are due now, instead of up to an hour later (the back-off grows while Apple is down). Those
    /// that failed for a reason of their own (a status about the receipt, 429) keep their schedule.
    func appleIsBack() async throws {
        let now = clock.milliseconds
        let moved = try await store.bringForward(cause: .appleUnavailable, bundleId: nil, at: now)
        if moved > 0 {
            logger.notice("Apple answers again: \(moved) submissions waiting to retry are due now")
            recoveringSince.withLock { $0 = ContinuousClock.now }
            signals.workAvailable.signal()
        }
    }

    /// Records an attempt's outcome: confirmation, a scheduled retry (or the dead-letter queue), or rejection
    /// with the revocation of what the local check granted.
    @discardableResult
    func settle(_ submission: SubmissionRecord, outcome: ConfirmationOutcome, app: ServerApp) async throws
        -> SubmissionState
    {
        let now = clock.milliseconds
        let settings = configuration.confirmation
        let catalogue = try await self.catalogue.products(of: app.bundleId)
        let state = try await database.transaction { db -> SubmissionState in
            guard var current = try await self.store.submission(id: submission.id, on: db),
                !current.state.isSettled
            else { return submission.state }
            current.attempts += 1
            current.updatedAt = now
            current.claimedUntil = nil
            switch outcome {
            case .confirmed(let environment, let transactions, let status):
                current.state = .confirmed
                current.lastStatus = status
                current.lastError = nil
                current.retryCause = nil
                current.confirmedAt = now
                current.nextAttemptAt = nil
                if environment.rawValue != current.environment {
                    try await self.store.moveEnvironment(of: current, to: environment, on: db)
                    current.environment = environment.rawValue
                }
                try await self.store.update(current, on: db)
                // Apple's answer is the truth: record what it knows (renewals, refunds), then mark it confirmed.
                // Ownership was decided when the customer submitted: Apple's answer, however late, moves nothing.
                _ = try await self.intake.record(
                    transactions,
                    submission: current,
                    app: app,
                    catalogue: catalogue,
                    transfers: false,
                    on: db
                )
                for id in Set(
                    transactions.map(\.transactionId) + current.transactionIds.ids
                ) {
                    if var row = try await self.store.transaction(
                        environment: current.environment,
                        transactionId: id,
                        on: db
                    ),
                        row.customerId == current.customerId, !row.confirmed || row.isRevokedByRejection
                    {
                        try await self.ledger.appleVouches(for: &row, catalogue: catalogue, now: now, on: db)
                        try await self.store.update(row, on: db)
                    }
                }
            case .retry(let status, let error, let cause):
                current.lastStatus = status
                current.lastError = error
                current.retryCause = cause
                if current.attempts >= settings.maximumAttempts {
                    current.state = .deadLettered
                    current.reason = "gave up after \(current.attempts) attempts; last: \(status)"
                    current.nextAttemptAt = nil
                    try await self.store.recordEvent(
                        bundleId: app.bundleId,
                        kind: "deadLettered",
                        detail: "submission \(current.id): \(status)",
                        at: now,
                        on: db
                    )
                } else {
                    current.state = .retrying
                    let delay = settings.delay(afterAttempt: current.attempts)
                    current.nextAttemptAt =
                        now + Int64(delay.components.seconds) * 1000 + delay.components.attoseconds
                        / 1_000_000_000_000_000
                }
                try await self.store.update(current, on: db)
            case .rejected(let status, let reason):
                current.state = .rejected
                current.lastStatus = status
                current.retryCause = nil
                current.reason = reason
                current.nextAttemptAt = nil
                try await self.store.update(current, on: db)
                try await self.ledger.revokeUnconfirmed(
                    of: current,
                    because: LedgerRecord.rejectionPrefix + status,
                    catalogue: catalogue,
                    on: db
                )
            }
            return current.state
        }
        return state
    }

    /// Confirmations allowed in flight: all of `concurrency`, except in the seconds after Apple came back with
    /// a backlog, when it starts at 16 and doubles every second (a slow start, as TCP's).
    func recoveryLimit(_ concurrency: Int, now: ContinuousClock.Instant = .now) -> Int {
        recoveringSince.withLock { since in
            guard let start = since else { return concurrency }
            let limit = Self.slowStartLimit(since: start, now: now, concurrency: concurrency)
            if limit >= concurrency { since = nil }  // full speed reached: the slow start is over
            return limit
        }
    }

    /// The slow start's limit `now`, for a recovery that began at `since`: 16, doubled each whole second, at most
    /// `concurrency`.
    static func slowStartLimit(since: ContinuousClock.Instant, now: ContinuousClock.Instant, concurrency: Int) -> Int {
        let seconds = max(0, Int((now - since).components.seconds))
        return seconds >= 20 ? concurrency : min(16 << seconds, concurrency)
    }

    // MARK: The operator's view

    /// A page of the submissions in a state, oldest change first (the dead-letter queue by default).
    public func submissions(state: String, page: PageRequest = PageRequest()) async throws -> Page<SubmissionView> {
        let records = try await store.submissions(state: state, after: page.after, limit: page.limit + 1, on: store.sql)
        let shown = records.prefix(page.limit)
        return Page(
            items: shown.map(SubmissionView.init),
            nextCursor: records.count > page.limit
                ? shown.last.map { PageKey(number: $0.updatedAt, text: $0.id).cursor } : nil,
            total: try await store.count(state: state, on: store.sql)
        )
    }

    /// Puts a dead-lettered submission back in the queue, with its attempts counted from zero.
    public func requeue(id: String) async throws -> SubmissionView {
        let record = try await database.transaction { db -> SubmissionRecord in
            guard var record = try await self.store.submission(id: id, on: db) else {
                throw TillHTTPError.notFound("submission", id)
            }
            guard record.state == .deadLettered else {
                throw TillHTTPError.conflict("notDeadLettered", "submission \(id) is \(record.state)")
            }
            record.state = .pending
            record.attempts = 0
            record.nextAttemptAt = self.clock.milliseconds
            record.reason = nil
            record.updatedAt = self.clock.milliseconds
            try await self.store.update(record, on: db)
            return record
        }
        signals.workAvailable.signal()
        return SubmissionView(record)
    }
}
