import Foundation
import SQLKit
import Synchronization
import TillCore
import TillHTTPKit
import TillLedger
import TillStorage

/// What kind of durable work a job is; each kind has one worker.
package enum JobKind: String, Codable, Sendable, CaseIterable {
    /// A submission to confirm with Apple (`ConfirmationQueue`); key: the submission's id.
    case confirmation
    /// One of Apple's consumption requests to answer (`ConsumptionAnswers`); key: its notification UUID.
    case consumptionAnswer
    /// An app to catch up with Apple (`CatchUp`); key: its bundle id. One run at a time per app.
    case catchUp
    /// An event to deliver to a webhook endpoint (`WebhookDeliveries`); key: the delivery's id; group: the endpoint;
    /// stream: the endpoint and the customer, so that one customer's events go out one at a time, in order.
    case delivery
    /// An import of an app's existing customers to read from Apple (`Imports`); key: the import's id. One attempt
    /// reads a batch of its rows and queues the next.
    case `import`
}

/// Where a job stands. A job that is done is deleted.
package enum JobState: String, Codable, Sendable {
    /// Waiting for `dueAt`, or under way while `claimedUntil` has not passed.
    case queued
    /// Given up on: an operator looks, and may put it back (`requeue`).
    case deadLettered
}

/// A row of `srv_jobs`.
package struct Job: Codable, Sendable, Hashable {
    package var kind: JobKind
    package var jobKey: String
    package var state: JobState
    /// Claims take one group at a time (a webhook endpoint's deliveries); "" for kinds without groups.
    package var queueGroup: String = ""
    /// Jobs of one stream run one at a time, by `position` (a customer's deliveries to one endpoint).
    package var stream: String? = nil
    package var position: Int64 = 0
    /// Attempts started, counted when claimed: the one count of a job's attempts. A claimed job's count, this
    /// attempt included, is the attempt's number; the room's row keeps a copy once the attempt is recorded, and an
    /// attempt the process stopped during is counted too. The room gives up on it: on this count where attempts are
    /// limited (confirmations), on its deadline where time is (consumption answers, deliveries).
    package var attempts: Int
    package var dueAt: Int64
    /// Held by a worker until then (several servers may share the queue on PostgreSQL).
    package var claimedUntil: Int64?
    package var lastError: String?
    package var createdAt: Int64
    package var updatedAt: Int64
    /// The W3C traceparent of the change that queued it, when tracing is on: its attempts continue that trace.
    package var trace: String? = nil

    package init(
        kind: JobKind,
        jobKey: String,
        state: JobState,
        queueGroup: String = "",
        stream: String? = nil,
        position: Int64 = 0,
        attempts: Int,
        dueAt: Int64,
        claimedUntil: Int64? = nil,
        lastError: String? = nil,
        createdAt: Int64,
        updatedAt: Int64,
        trace: String? = nil
    ) {
        self.kind = kind
        self.jobKey = jobKey
        self.state = state
        self.queueGroup = queueGroup
        self.stream = stream
        self.position = position
        self.attempts = attempts
        self.dueAt = dueAt
        self.claimedUntil = claimedUntil
        self.lastError = lastError
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.trace = trace
    }
}

/// A row of `srv_job_holds`: the worker that acts for a group of a kind outside of claims, until when.
package struct JobHold: Codable, Sendable, Hashable {
    package var kind: JobKind
    package var queueGroup: String
    package var holder: String
    /// UNIX ms; after it, the group is anyone's.
    package var heldUntil: Int64
}

/// The durable job queue: every piece of work the server must do later and must not lose — a confirmation with
/// Apple, an answer to a consumption request, a catch-up run, a webhook delivery — is a job in `srv_jobs`, written in
/// the same database transaction as what calls for it.
///
/// A worker claims due jobs of its kind with a lease (`claim`): on PostgreSQL several servers share the queue (`FOR
/// UPDATE SKIP LOCKED`); on SQLite the process that owns the file does, and releases the claims a killed process left
/// (`releaseAllClaims`). A job of a stream is claimed only when no job before it in the stream is queued, so a stream
/// runs in order. The worker ends each attempt in the transaction that records its outcome: done (`finish`), again at
/// a time it chooses with its back-off (`retry`), or given up on (`deadLetter`). `wake` signals the kind's worker;
/// `/metrics` reports each kind's depth and outcomes.
///
/// A group may also be **held** (`hold`): one worker at a time acts for it outside of claims, until its hold lapses
/// or it lets go (`releaseHolds`). Webhooks hold an endpoint to send its newest events before any job is written; on
/// SQLite the owner of the file frees every hold at start, as it frees the claims (`releaseAllHolds`).
package struct JobQueue: Sendable {
    package let database: TillDatabase
    package let store: JobStore
    package let clock: ServerClock
    package let metrics: any JobMetrics
    private let wakeups: [JobKind: Wakeup]

    package init(database: TillDatabase, store: JobStore, clock: ServerClock, metrics: any JobMetrics) {
        self.database = database
        self.store = store
        self.clock = clock
        self.metrics = metrics
        self.wakeups = Dictionary(uniqueKeysWithValues: JobKind.allCases.map { ($0, Wakeup()) })
    }

    /// What a kind's worker waits on: signalled when a job of the kind is queued or becomes due.
    package func signal(_ kind: JobKind) -> Wakeup { wakeups[kind]! }

    /// Wakes the kind's worker (after the transaction that queued a job committed).
    package func wake(_ kind: JobKind) { signal(kind).signal() }

    // MARK: Queueing

    /// Queues a job in `db`'s transaction, due at `dueAt` (now by default); a job already queued under this key is
    /// left as it is. `trace` is the traceparent of the change that queues it (`ChangeSet.trace`), which its attempts
    /// continue.
    package func enqueue(
        _ kind: JobKind,
        key: String,
        group: String = "",
        stream: String? = nil,
        position: Int64 = 0,
        dueAt: Int64? = nil,
        trace: String?,
        on db: any SQLDatabase
    ) async throws {
        let now = clock.milliseconds
        try await store.insertJob(
            Job(
                kind: kind,
                jobKey: key,
                state: .queued,
                queueGroup: group,
                stream: stream,
                position: position,
                attempts: 0,
                dueAt: dueAt ?? now,
                claimedUntil: nil,
                createdAt: now,
                updatedAt: now,
                trace: trace
            ),
            on: db
        )
    }

    /// Makes a job due at `dueAt` at the latest: queued anew if there is none (a catch-up at start), brought forward
    /// if it is due later. A job under way or dead-lettered is left as it is.
    package func schedule(_ kind: JobKind, key: String, dueAt: Int64, on db: any SQLDatabase) async throws {
        try await store.scheduleJob(kind: kind, key: key, dueAt: dueAt, now: clock.milliseconds, on: db)
    }

    // MARK: Claiming

    /// Claims up to `limit` due jobs of a kind (of one group) for `lease`, oldest due first, each the first queued of
    /// its stream; their attempts are counted. Their own transaction: claims change nothing a cache holds.
    ///
    /// A read first: a worker that finds nothing due opens no write transaction. (One that wrote nothing would tell
    /// the `StorageGate` that writes work again while the disk is still full, ending its outage each time a worker
    /// looked.)
    package func claim(_ kind: JobKind, group: String = "", limit: Int, lease: Duration) async throws -> [Job] {
        guard limit > 0 else { return [] }
        let now = clock.milliseconds
        guard try await store.hasClaimableJob(kind: kind, group: group, now: now, on: store.sql) else { return [] }
        return try await database.transaction(bookkeeping: true) { db in
            try await self.store.claimJobs(
                kind: kind,
                group: group,
                limit: limit,
                now: now,
                until: now + lease.milliseconds,
                on: db
            )
        }
    }

    /// `claim(_:group:limit:lease:)` in `db`'s transaction (with what the worker records in it), leaving out the jobs
    /// with the keys in `excluding` (the worker's own, under way: never claimed twice by one live worker, even once
    /// their lease has passed).
    package func claim(
        _ kind: JobKind,
        group: String = "",
        limit: Int,
        lease: Duration,
        excluding: [String] = [],
        on db: any SQLDatabase
    ) async throws -> [Job] {
        guard limit > 0 else { return [] }
        let now = clock.milliseconds
        return try await store.claimJobs(
            kind: kind,
            group: group,
            limit: limit,
            now: now,
            until: now + lease.milliseconds,
            excluding: excluding,
            on: db
        )
    }

    /// Claims one job by its key now, whether due or not, queuing it if there is none (an operator's catch-up of an
    /// app). Nil when another worker holds it.
    package func claim(_ kind: JobKind, key: String, lease: Duration) async throws -> Job? {
        let now = clock.milliseconds
        return try await database.transaction(bookkeeping: true) { db in
            try await self.store.claimJob(kind: kind, key: key, now: now, until: now + lease.milliseconds, on: db)
        }
    }

    // MARK: Ending an attempt (in the transaction that records its outcome)

    /// The job is done: it leaves the queue.
    /// With `attempt` (the claim's count), only if no later claim has started another attempt meanwhile, as for
    /// `retry`. Answers whether the job was finished here.
    @discardableResult
    package func finish(_ kind: JobKind, key: String, attempt: Int? = nil, on db: any SQLDatabase) async throws -> Bool
    {
        let deleted = try await store.deleteJob(kind: kind, key: key, attempt: attempt, on: db)
        guard deleted || attempt == nil else { return false }
        metrics.jobs(kind, .finished, count: 1)
        return true
    }

    /// These jobs are done (one statement).
    package func finish(_ kind: JobKind, keys: [String], on db: any SQLDatabase) async throws {
        guard !keys.isEmpty else { return }
        try await store.deleteJobs(kind: kind, keys: keys, on: db)
        metrics.jobs(kind, .finished, count: keys.count)
    }

    /// The job runs again at `at` (its back-off, decided by its worker). With `attempt` (the claim's count), only if
    /// no later claim has started another attempt meanwhile (this one's claim lapsed while it ran): that attempt is
    /// the job's now, and decides what comes next. Answers whether the job was rescheduled.
    @discardableResult
    package func retry(
        _ kind: JobKind,
        key: String,
        at: Int64,
        error: String?,
        attempt: Int? = nil,
        on db: any SQLDatabase
    ) async throws -> Bool {
        let now = clock.milliseconds
        guard
            try await store.rescheduleJob(
                kind: kind,
                key: key,
                dueAt: at,
                error: error,
                now: now,
                attempt: attempt,
                on: db
            )
        else { return false }
        metrics.jobs(kind, .retried, count: 1)
        return true
    }

    /// The job is given up on until an operator puts it back. With `attempt`, only if it is still the job's latest, as
    /// for `retry`. Answers whether the job was given up.
    @discardableResult
    package func deadLetter(
        _ kind: JobKind,
        key: String,
        error: String?,
        attempt: Int? = nil,
        on db: any SQLDatabase
    ) async throws -> Bool {
        guard
            try await store.deadLetterJob(
                kind: kind,
                key: key,
                error: error,
                now: clock.milliseconds,
                attempt: attempt,
                on: db
            )
        else { return false }
        metrics.jobs(kind, .deadLettered, count: 1)
        return true
    }

    /// Puts a dead-lettered job back, its attempts counted from zero, due now; false when there is none.
    package func requeue(_ kind: JobKind, key: String, on db: any SQLDatabase) async throws -> Bool {
        try await store.requeueJob(kind: kind, key: key, now: clock.milliseconds, on: db)
    }

    /// The due time of a queued job, if there is one.
    package func dueAt(_ kind: JobKind, key: String, on db: any SQLDatabase) async throws -> Int64? {
        try await store.job(kind: kind, key: key, on: db).flatMap { $0.state == .queued ? $0.dueAt : nil }
    }

    /// How many jobs of each kind are queued and dead-lettered, and the due time of the oldest queued one.
    package func depth() async throws -> [JobStore.JobDepth] { try await store.jobDepth() }

    /// When the next job of a kind that no live worker holds is due (UNIX ms), if one is queued.
    package func nextDue(_ kind: JobKind) async throws -> Int64? {
        try await store.nextJobDue(kind: kind, now: clock.milliseconds, on: store.sql)
    }

    /// Clears every claim (only for a process that knows no other worker is alive: the owner of an SQLite file);
    /// answers how many jobs of each kind were held.
    package func releaseAllClaims() async throws -> [JobKind: Int] {
        try await database.transaction(bookkeeping: true) { db in try await self.store.releaseJobClaims(on: db) }
    }

    // MARK: Holds

    /// Makes `holder` the holder of a kind's group until `until` (UNIX ms), in `db`'s transaction, unless another
    /// worker holds it and its hold has not lapsed; answers whether `holder` holds it.
    package func hold(_ kind: JobKind, group: String, for holder: String, until: Int64, on db: any SQLDatabase)
        async throws -> Bool
    {
        try await store.holdGroup(
            kind: kind,
            group: group,
            holder: holder,
            until: until,
            now: clock.milliseconds,
            on: db
        )
    }

    /// Who holds each of a kind's groups now, by group (the holds that have not lapsed).
    package func holds(_ kind: JobKind, on db: any SQLDatabase) async throws -> [String: JobHold] {
        Dictionary(
            try await store.groupHolds(kind: kind, now: clock.milliseconds, on: db).map { ($0.queueGroup, $0) },
            uniquingKeysWith: { first, _ in first }
        )
    }

    /// Whether a worker other than `worker` holds a kind's group now, in `db`'s transaction.
    package func isHeld(_ kind: JobKind, group: String, byAnotherThan worker: String, on db: any SQLDatabase)
        async throws -> Bool
    {
        try await store.groupHolds(kind: kind, group: group, now: clock.milliseconds, on: db)
            .contains { $0.holder != worker }
    }

    /// `holder` stops: every group of `kind` it held is free for any worker at once.
    package func releaseHolds(_ kind: JobKind, of holder: String) async throws {
        try await database.transaction(bookkeeping: true) { db in
            try await self.store.releaseHolds(kind: kind, holder: holder, on: db)
        }
    }

    /// Frees every hold (only for a process that knows no other worker is alive: the owner of an SQLite file);
    /// answers how many groups of each kind were held.
    package func releaseAllHolds() async throws -> [JobKind: Int] {
        try await database.transaction(bookkeeping: true) { db in try await self.store.releaseAllHolds(on: db) }
    }

    /// Sleeps until a job of `kind` may be due: a signal, the next due time (when `untilDue`; a worker with attempts
    /// under way waits for one to end instead), or `longest` at most (another process may have queued one).
    package func waitForWork(_ kind: JobKind, since: UInt64, longest: Duration, untilDue: Bool) async {
        let next =
            untilDue ? (try? await nextDue(kind)).map { Duration.milliseconds(max(0, $0 - clock.milliseconds)) } : nil
        await signal(kind).wait(since: since, timeout: max(.milliseconds(10), min(longest, next ?? longest)))
    }
}
