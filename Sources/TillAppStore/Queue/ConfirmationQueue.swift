import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import SQLKit
import ServiceLifecycle
import Synchronization
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillJobs
import TillLedger
import TillStorage

/// The confirmation queue: submissions waiting for Apple's word, each a `confirmation` job of the job queue. It claims
/// what is due (several servers may share it on PostgreSQL), asks Apple (`AppleQuestions`), and settles each attempt:
/// confirmed (the ledger records Apple's answer), retried on the configured schedule, dead-lettered after the last
/// attempt, or rejected (the ledger takes back what the local check granted). `ConfirmationWorker` runs it.
public final class ConfirmationQueue: AppStoreRoom, Sendable {
    let services: AppStoreServices
    let intake: Intake
    let questions: AppleQuestions
    let signals: QueueSignals
    /// Set when Apple stopped answering (timeouts, resets, 5xx); the first real answer after it brings the
    /// submissions that wait for their back-off forward (see `appleIsBack()`).
    let appleUnavailable = Mutex(false)
    /// When Apple came back with a backlog: the worker's concurrency starts small then doubles each second,
    /// so confirming the backlog does not take the CPU that acknowledging new purchases needs.
    let recoveringSince = Mutex<ContinuousClock.Instant?>(nil)
    /// How fast the worker may start confirmation attempts (see `ConfirmationPacer`).
    package let pacer: ConfirmationPacer
    /// The submissions, their payloads and their attempts.
    var submissionStore: SubmissionStore { SubmissionStore(database: database) }

    package init(
        services: AppStoreServices,
        intake: Intake,
        signals: QueueSignals
    ) {
        self.services = services
        self.intake = intake
        self.questions = AppleQuestions(
            database: services.database,
            verifier: services.verifier,
            metrics: services.metrics
        )
        self.signals = signals
        self.pacer = ConfirmationPacer(
            .init(
                busy: services.configuration.confirmation.busyCPUShare,
                longestDelay: services.configuration.confirmation.longestPacingDelay
            )
        )
    }

    /// Confirmation attempts a second the pacer allows now.
    public var pace: Double { pacer.rate }

    /// A submission claimed for one confirmation attempt.
    struct ClaimedSubmission: Sendable {
        /// The submission as it stood when claimed.
        var record: SubmissionRecord
        /// The attempt's number: its job's count of attempts started, this one included. The submission's
        /// `attempts` is a copy of it, made when the attempt is settled; an attempt the process stopped during is
        /// counted too.
        var attempt: Int
        /// When the job was due (how late the worker is).
        var dueAt: Int64
        /// The trace of the submission that queued it (docs/tracing.md), which its attempts continue.
        var trace: String? = nil
    }

    /// Claims due submissions for this process: their confirmation jobs, due and not held by a live worker (several
    /// servers may share the queue on PostgreSQL), oldest due first.
    ///
    /// A job claimed more often than `confirmation.max-attempts` allows has had attempts that never ended (the
    /// process stopped during each, or its app is gone): it is dead-lettered here without asking Apple again, so a
    /// submission that stops the server cannot stop it forever.
    func claimDueSubmissions(limit: Int, lease: Duration) async throws -> [ClaimedSubmission] {
        let claimed = try await jobs.claim(.confirmation, limit: limit, lease: lease)
        guard !claimed.isEmpty else { return [] }
        let submissions = try await submissionStore.submissions(ids: claimed.map(\.jobKey), on: database.sql)
        let open = Dictionary(
            submissions.filter { !$0.state.isSettled }.map { ($0.id, $0) },
            uniquingKeysWith: { first, _ in first }
        )
        let stale = claimed.map(\.jobKey).filter { open[$0] == nil }
        if !stale.isEmpty {
            // A job whose submission is gone or settled has nothing left to do.
            try await database.transaction(bookkeeping: true) { db in
                try await self.jobs.finish(.confirmation, keys: stale, on: db)
            }
        }
        var due: [ClaimedSubmission] = []
        for job in claimed {
            guard let record = open[job.jobKey] else { continue }
            let submission = ClaimedSubmission(
                record: record,
                attempt: job.attempts,
                dueAt: job.dueAt,
                trace: job.trace
            )
            if job.attempts > configuration.confirmation.maximumAttempts {
                // One that cannot be given up now is claimed again when its lease lapses; the others go on.
                do { try await giveUp(submission) } catch {
                    logger.error("confirmation of \(record.id): giving up failed: \(error)")
                }
            } else {
                due.append(submission)
            }
        }
        return due.sorted { ($0.dueAt, $0.record.id) < ($1.dueAt, $1.record.id) }
    }

    /// Dead-letters a submission whose job has used up its attempts without one of them ending (a job whose app is
    /// gone has nothing left to do).
    private func giveUp(_ submission: ClaimedSubmission) async throws {
        let started = submission.attempt - 1
        let unfinished = started - submission.record.attempts
        let error =
            unfinished > 0
            ? "\(unfinished) attempts never ended (the process stopped during them, or the app was gone)"
            : "its \(started) attempts are more than confirmation.max-attempts allows now"
        logger.error("confirmation of \(submission.record.id) given up: \(error)")
        guard let app = try await catalogue.cachedApp(bundleId: submission.record.bundleId) else {
            return try await database.transaction(bookkeeping: true) { db in
                try await self.jobs.finish(.confirmation, key: submission.record.id, on: db)
            }
        }
        try await settle(
            submission.record,
            attempt: started,
            claim: submission.attempt,
            outcome: .retry(status: "interrupted", error: error, cause: .other),
            app: app
        )
        signals.submissionSettled.signal()
    }

    /// Whether an attempt's outcome still applies to a submission in `state`. While it is unsettled, any outcome does.
    /// A dead-lettered one takes Apple's definitive answer (confirmed or rejected) from an attempt that ends after its
    /// claim lapsed and a later claim gave up: that answer is what an operator's retry would go and ask for. A retry
    /// leaves it dead-lettered, and nothing changes a confirmed or rejected one.
    static func applies(_ outcome: ConfirmationOutcome, to state: SubmissionState) -> Bool {
        switch (state, outcome) {
        case (.pending, _), (.retrying, _): true
        case (.deadLettered, .confirmed), (.deadLettered, .rejected): true
        case (.deadLettered, .retry), (.confirmed, _), (.rejected, _): false
        }
    }

    /// One confirmation attempt: asks Apple and records the outcome. With a pacer, each answer waits for its
    /// turn before it is read (`ConfirmationPacer.answer()`).
    func confirm(_ claimed: ClaimedSubmission, client: AppleClient, pacer: ConfirmationPacer? = nil) async {
        let submission = claimed.record
        do {
            guard
                let app = try await catalogue.cachedApp(bundleId: submission.bundleId)
            else { return }
            let clock = ContinuousClock()
            let start = clock.now
            let outcome = await questions.ask(client, about: submission, app: app, pacer: pacer)
            let asked = clock.now - start
            let result = try await settle(
                submission,
                attempt: claimed.attempt,
                outcome: outcome,
                app: app,
                duration: asked
            )
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

    /// Makes the confirmations waiting to retry for `cause` (of one app, or of all with nil) due now, as one
    /// transaction: a fix of what they failed on (an app's new credentials for Apple) need not wait for their
    /// back-off. Static because the catalogue's hook that calls it is made before the queue. Answers how many moved.
    package static func bringForward(
        cause: RetryCause,
        bundleId: String?,
        database: TillDatabase,
        at now: Int64
    ) async throws -> Int {
        try await SubmissionStore(database: database).bringForward(cause: cause, bundleId: bundleId, at: now)
    }

    /// Apple answers again after an outage: submissions waiting out a back-off because Apple could not be
    /// reached are due now, instead of up to an hour later (the back-off grows while Apple is down). Those
    /// that failed for a reason of their own (a status about the receipt, 429) keep their schedule.
    func appleIsBack() async throws {
        let now = clock.milliseconds
        let moved = try await submissionStore.bringForward(cause: .appleUnavailable, bundleId: nil, at: now)
        if moved > 0 {
            logger.notice("Apple answers again: \(moved) submissions waiting to retry are due now")
            recoveringSince.withLock { $0 = ContinuousClock.now }
            signals.workAvailable.signal()
        }
    }

    /// Records an attempt's outcome: confirmation, a scheduled retry (or the dead-letter queue), or rejection
    /// with the revocation of what the local check granted.
    ///
    /// - Parameters:
    ///   - attempt: the attempt's number, its job's count (`ClaimedSubmission.attempt`), which the submission keeps.
    ///   - claim: the job's count when it was claimed for this outcome (the attempt's number, unless the outcome is
    ///     the claim's own: giving up), so that a retry outcome of a claim that lapsed schedules nothing.
    ///   - duration: how long Apple took, kept with the attempt (`srv_submission_attempts`).
    @discardableResult
    func settle(
        _ submission: SubmissionRecord,
        attempt: Int,
        claim: Int? = nil,
        outcome: ConfirmationOutcome,
        app: ServerApp,
        duration: Duration? = nil
    ) async throws -> SubmissionState {
        let now = clock.milliseconds
        let settings = configuration.confirmation
        let catalogue = try await self.catalogue.products(of: app.bundleId)
        let state = try await ledger.transaction(source: .confirmation(submission.id)) { changes -> SubmissionState in
            let db = changes.db
            // Held to the end of the change: an operator's retry of a dead letter waits for a late answer, and the
            // other way round.
            guard var current = try await self.submissionStore.submission(id: submission.id, locking: true, on: db)
            else { return submission.state }
            guard Self.applies(outcome, to: current.state) else { return current.state }
            // The job's count; never backwards, should an attempt whose claim lapsed end after a later one.
            current.attempts = max(current.attempts, attempt)
            current.updatedAt = now
            // The state an attempt leaves alone when a later one decides (see `.retry`).
            var superseded: SubmissionState?
            // An answer that changes the ledger (a confirmation, a rejection) is written to the account the
            // submission's customer stands for now: a guest linked since is its account's, and so are the rows the
            // link moved. Held before any of the purchase's rows, in the order a link takes them
            // (`CustomerStore.owner`); the submission keeps who sent it. A retry changes no ledger row.
            var owner = current.customerId
            if !outcome.isRetry {
                owner = try await self.ledger.customerStore.owner(
                    bundleId: current.bundleId,
                    customerId: current.customerId,
                    on: db
                )
            }
            switch outcome {
            case .confirmed(let environment, let transactions, let status):
                // Given up on before this late answer came: why it was is no longer so.
                if current.state == .deadLettered { current.reason = nil }
                current.state = .confirmed
                current.lastStatus = status
                current.lastError = nil
                current.retryCause = nil
                current.confirmedAt = now
                current.nextAttemptAt = nil
                let claimed = current.environment
                current.environment = environment
                try await self.submissionStore.update(current, on: db)
                try await self.ledger.moveEnvironment(of: current.id, from: claimed, to: environment, in: changes)
                // Apple's answer is the truth: record what it knows (renewals, refunds), then mark it confirmed.
                // Ownership was decided when the customer submitted: Apple's answer, however late, moves nothing.
                var owned = current
                owned.customerId = owner
                _ = try await self.intake.record(
                    transactions,
                    submission: owned,
                    app: app,
                    catalogue: catalogue,
                    transfers: false,
                    in: changes
                )
                try await self.ledger.confirm(
                    owned,
                    transactionIds: Set(transactions.map(\.transactionId) + current.transactionIds.ids),
                    catalogue: catalogue,
                    in: changes
                )
                try await self.jobs.finish(.confirmation, key: current.id, on: db)
            case .retry(let status, let error, let cause, let retryAfter):
                // Only the job's latest attempt schedules the next (or gives up): one whose claim lapsed while it ran
                // leaves that to the attempt a later claim started, which is under way, and is kept as history only.
                let stored = current.state
                current.lastStatus = status
                current.lastError = error
                current.retryCause = cause
                let latest: Bool
                if current.attempts >= settings.maximumAttempts {
                    latest = try await self.jobs.deadLetter(
                        .confirmation,
                        key: current.id,
                        error: error,
                        attempt: claim ?? attempt,
                        on: db
                    )
                    current.state = .deadLettered
                    current.reason = "gave up after \(current.attempts) attempts; last: \(status)"
                    current.nextAttemptAt = nil
                } else {
                    let next = now + settings.delay(afterAttempt: current.attempts, retryAfter: retryAfter).milliseconds
                    latest = try await self.jobs.retry(
                        .confirmation,
                        key: current.id,
                        at: next,
                        error: error,
                        attempt: claim ?? attempt,
                        on: db
                    )
                    current.state = .retrying
                    current.nextAttemptAt = next
                }
                if latest {
                    try await self.submissionStore.update(current, on: db)
                } else {
                    // Its record says what it saw; the submission stays as the later attempt will leave it.
                    current.state = .retrying
                    superseded = stored
                }
            case .rejected(let status, let reason):
                current.state = .rejected
                current.lastStatus = status
                current.retryCause = nil
                current.reason = reason
                current.nextAttemptAt = nil
                try await self.submissionStore.update(current, on: db)
                try await self.ledger.revokeUnconfirmed(
                    of: current,
                    status: status,
                    reason: reason,
                    catalogue: catalogue,
                    in: changes
                )
                try await self.jobs.finish(.confirmation, key: current.id, on: db)
            }
            try await self.submissionStore.insert(
                SubmissionAttemptRecord(
                    submissionId: current.id,
                    at: now,
                    environment: current.environment,
                    outcome: current.state,
                    status: current.lastStatus,
                    error: current.state == .confirmed ? nil : current.lastError ?? current.reason,
                    retryCause: current.retryCause,
                    duration: duration.map { $0.nanoseconds / 1_000_000 }
                ),
                on: db
            )
            return superseded ?? current.state
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
}
