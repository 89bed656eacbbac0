import Foundation
import SQLKit
import TillLedger
import TillStorage

/// The durable job queue's table (`JobQueue`): one table, `srv_jobs`, for every kind of work (migration 018-jobs).
/// The only writer of `srv_jobs` (`LayoutTests.onlyTheJobStoreWritesJobs`): the rooms' stores call it.
package struct JobStore: ServerSQLStore {
    package let database: TillDatabase

    func insertJob(_ job: Job, on db: any SQLDatabase) async throws {
        try await db.run(
            Self.insertJob(
                job.kind.rawValue,
                job.jobKey,
                job.state.rawValue,
                job.queueGroup,
                job.stream,
                job.position,
                job.attempts,
                job.dueAt,
                job.createdAt,
                job.updatedAt,
                job.trace
            )
        )
    }

    private static let insertJob = FixedStatement(
        """
        INSERT INTO srv_jobs (kind, job_key, state, queue_group, stream, position, attempts, due_at, claimed_until,
            last_error, created_at, updated_at, trace)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, NULL, NULL, ?9, ?10, ?11)
        ON CONFLICT (kind, job_key) DO NOTHING
        """
    )

    /// Queues the job due at `dueAt`, or brings a queued one forward to it; one under way or dead-lettered stays.
    func scheduleJob(kind: JobKind, key: String, dueAt: Int64, now: Int64, on db: any SQLDatabase) async throws {
        try await db.raw(
            """
            INSERT INTO srv_jobs (kind, job_key, state, queue_group, stream, position, attempts, due_at, claimed_until,
                last_error, created_at, updated_at)
            VALUES (\(bind: kind.rawValue), \(bind: key), 'queued', '', NULL, 0, 0, \(bind: dueAt), NULL, NULL,
                \(bind: now), \(bind: now))
            ON CONFLICT (kind, job_key) DO UPDATE SET due_at = excluded.due_at, updated_at = excluded.updated_at
            WHERE srv_jobs.state = 'queued' AND srv_jobs.due_at > excluded.due_at
              AND (srv_jobs.claimed_until IS NULL OR srv_jobs.claimed_until < \(bind: now))
            """
        ).run()
    }

    /// Claims up to `limit` due jobs of a kind and group until `until`: queued, due by `now`, not held by a live
    /// worker, not among `excluding` (the caller's own, under way), and the first queued of their stream; counts their
    /// attempt. On PostgreSQL several servers share the queue (`FOR UPDATE SKIP LOCKED`); on SQLite one process owns it.
    func claimJobs(
        kind: JobKind,
        group: String,
        limit: Int,
        now: Int64,
        until: Int64,
        excluding: [String] = [],
        on db: any SQLDatabase
    ) async throws -> [Job] {
        let postgres = database.engine == .postgres
        let lock: SQLQueryString = postgres ? "FOR UPDATE SKIP LOCKED" : ""
        // On PostgreSQL the jobs are picked once, as an InitPlan (`= ANY(ARRAY(…))`): under `IN (…)` the planner may
        // choose a semi-join that runs the pick again for each row, and a second run skips the rows the statement
        // has just updated and picks more, past the limit (seen once a column was added to the table).
        let (open, close): (SQLQueryString, SQLQueryString) = postgres ? ("= ANY(ARRAY(", "))") : ("IN (", ")")
        let notHeld: SQLQueryString = excluding.isEmpty ? "" : "AND j.job_key NOT IN (\(binds: excluding))"
        return try await db.raw(
            """
            UPDATE srv_jobs SET claimed_until = \(bind: until), attempts = attempts + 1, updated_at = \(bind: now)
            WHERE kind = \(bind: kind.rawValue) AND job_key \(open)
                SELECT j.job_key FROM srv_jobs j
                WHERE j.kind = \(bind: kind.rawValue) AND j.queue_group = \(bind: group) AND j.state = 'queued'
                  AND j.due_at <= \(bind: now) AND (j.claimed_until IS NULL OR j.claimed_until < \(bind: now))
                  \(notHeld)
                  AND (j.stream IS NULL OR NOT EXISTS (
                    SELECT 1 FROM srv_jobs e WHERE e.kind = j.kind AND e.stream = j.stream AND e.state = 'queued'
                      AND e.position < j.position))
                ORDER BY j.due_at, j.position LIMIT \(literal: limit) \(lock)\(close)
            RETURNING *
            """
        ).all().map(Job.init(row:)).sorted { ($0.dueAt, $0.position) < ($1.dueAt, $1.position) }
    }

    /// Claims one job by its key (queued anew if missing) until `until`, unless a live worker holds it.
    func claimJob(kind: JobKind, key: String, now: Int64, until: Int64, on db: any SQLDatabase) async throws -> Job? {
        try await db.raw(
            """
            INSERT INTO srv_jobs (kind, job_key, state, queue_group, stream, position, attempts, due_at, claimed_until,
                last_error, created_at, updated_at)
            VALUES (\(bind: kind.rawValue), \(bind: key), 'queued', '', NULL, 0, 1, \(bind: now), \(bind: until), NULL,
                \(bind: now), \(bind: now))
            ON CONFLICT (kind, job_key) DO UPDATE
            SET claimed_until = excluded.claimed_until, attempts = srv_jobs.attempts + 1, state = 'queued',
                updated_at = excluded.updated_at
            WHERE srv_jobs.claimed_until IS NULL OR srv_jobs.claimed_until < \(bind: now)
            RETURNING *
            """
        ).first(decoding: Job.self, with: Self.decoding)
    }

    /// With `attempt`, only while that is the job's latest attempt: false, and nothing deleted, when a later claim has
    /// started another (or the job is gone).
    @discardableResult
    func deleteJob(kind: JobKind, key: String, attempt: Int? = nil, on db: any SQLDatabase) async throws -> Bool {
        let statement =
            if let attempt { Self.deleteAttempt(kind.rawValue, key, attempt) } else { Self.delete(kind.rawValue, key) }
        return try await db.first(statement) != nil
    }

    private static let delete = FixedStatement(
        "DELETE FROM srv_jobs WHERE kind = ?1 AND job_key = ?2 RETURNING job_key"
    )
    private static let deleteAttempt = FixedStatement(
        "DELETE FROM srv_jobs WHERE kind = ?1 AND job_key = ?2 AND attempts = ?3 RETURNING job_key"
    )

    func deleteJobs(kind: JobKind, keys: [String], on db: any SQLDatabase) async throws {
        guard !keys.isEmpty else { return }
        try await db.raw("DELETE FROM srv_jobs WHERE kind = \(bind: kind.rawValue) AND job_key IN (\(binds: keys))")
            .run()
    }

    /// The condition that fences an attempt's outcome: with `attempt`, the job's count must still be it (no later
    /// claim has started another attempt); without, nothing.
    private static func onlyIfLatest(_ attempt: Int?) -> SQLQueryString {
        attempt.map { "AND attempts = \(bind: $0)" } ?? ""
    }

    /// Queues the job again at `dueAt`; the jobs after it in its stream wait as long (they cannot run before it, and
    /// a claim then does not read them while they wait). With `attempt`, only while that is the job's latest attempt
    /// (its count): false, and nothing written, when a later claim has started another.
    @discardableResult
    func rescheduleJob(
        kind: JobKind,
        key: String,
        dueAt: Int64,
        error: String?,
        now: Int64,
        attempt: Int? = nil,
        on db: any SQLDatabase
    ) async throws -> Bool {
        let latest = Self.onlyIfLatest(attempt)
        let row = try await db.raw(
            """
            UPDATE srv_jobs SET state = 'queued', due_at = \(bind: dueAt), claimed_until = NULL,
                last_error = \(bind: error), updated_at = \(bind: now)
            WHERE kind = \(bind: kind.rawValue) AND job_key = \(bind: key) \(latest)
            RETURNING stream, position
            """
        ).first()
        guard let row else { return false }
        guard let stream = try row.decode(column: "stream", as: String?.self) else { return true }
        try await db.raw(
            """
            UPDATE srv_jobs SET due_at = \(bind: dueAt)
            WHERE kind = \(bind: kind.rawValue) AND stream = \(bind: stream) AND state = 'queued'
              AND position > \(bind: try row.decode(column: "position", as: Int64.self)) AND due_at < \(bind: dueAt)
            """
        ).run()
        return true
    }

    /// Jobs in one statement; each queued behind a job of its stream that is due later is due then too.
    package func insertJobs(_ jobs: [Job], on db: any SQLDatabase) async throws {
        guard let kind = jobs.first?.kind else { return }
        try await db.run(RecordStatements.insert(into: "srv_jobs", columns: Job.columns, rows: jobs.map(\.row)))
        let streamed = jobs.filter { $0.stream != nil }.map(\.jobKey)
        guard !streamed.isEmpty else { return }
        let before: SQLQueryString = """
            (SELECT p.due_at FROM srv_jobs p WHERE p.kind = srv_jobs.kind AND p.stream = srv_jobs.stream
              AND p.state = 'queued' AND p.position < srv_jobs.position ORDER BY p.position DESC LIMIT 1)
            """
        try await db.raw(
            """
            UPDATE srv_jobs SET due_at = \(before)
            WHERE kind = \(bind: kind.rawValue) AND job_key IN (\(binds: streamed)) AND \(before) > due_at
            """
        ).run()
    }

    /// Gives the job up: dead-lettered with `error`, or with the error of its last attempt when `error` is nil.
    /// With `attempt`, only while that is the job's latest attempt: false, and nothing written, when a later claim has
    /// started another.
    @discardableResult
    package func deadLetterJob(
        kind: JobKind,
        key: String,
        error: String?,
        now: Int64,
        attempt: Int? = nil,
        on db: any SQLDatabase
    ) async throws -> Bool {
        let latest = Self.onlyIfLatest(attempt)
        return try await db.raw(
            """
            UPDATE srv_jobs SET state = 'deadLettered', claimed_until = NULL, last_error = COALESCE(\(bind: error), last_error),
                updated_at = \(bind: now)
            WHERE kind = \(bind: kind.rawValue) AND job_key = \(bind: key) \(latest)
            RETURNING job_key
            """
        ).first() != nil
    }

    /// Removes every job of a kind in one group, and the group's hold (a webhook endpoint's deliveries, when it is
    /// deleted).
    package func deleteJobs(kind: JobKind, group: String, on db: any SQLDatabase) async throws {
        try await db.raw("DELETE FROM srv_jobs WHERE kind = \(bind: kind.rawValue) AND queue_group = \(bind: group)")
            .run()
        // And its hold: a group that is gone has nobody acting for it.
        try await db.raw(
            "DELETE FROM srv_job_holds WHERE kind = \(bind: kind.rawValue) AND queue_group = \(bind: group)"
        ).run()
    }

    /// Makes the queued jobs of a kind that are due later due at `now`: those of one group, or those whose keys
    /// `keys` selects (a subquery); answers their keys.
    package func bringJobsForward(
        kind: JobKind,
        group: String? = nil,
        keys: SQLQueryString? = nil,
        at now: Int64,
        on db: any SQLDatabase
    ) async throws -> [String] {
        var filter: SQLQueryString = ""
        if let group { filter = filter + " AND queue_group = \(bind: group)" }
        if let keys { filter = filter + " AND job_key IN (" + keys + ")" }
        return try await db.raw(
            """
            UPDATE srv_jobs SET due_at = \(bind: now)
            WHERE kind = \(bind: kind.rawValue) AND state = 'queued' AND due_at > \(bind: now)\(filter)
            RETURNING job_key
            """
        ).all().map { try $0.decode(column: "job_key", as: String.self) }
    }

    func requeueJob(kind: JobKind, key: String, now: Int64, on db: any SQLDatabase) async throws -> Bool {
        try await db.raw(
            """
            UPDATE srv_jobs SET state = 'queued', attempts = 0, due_at = \(bind: now), claimed_until = NULL,
                updated_at = \(bind: now)
            WHERE kind = \(bind: kind.rawValue) AND job_key = \(bind: key) AND state = 'deadLettered'
            RETURNING job_key
            """
        ).first() != nil
    }

    package func job(kind: JobKind, key: String, on db: any SQLDatabase) async throws -> Job? {
        try await db.raw("SELECT * FROM srv_jobs WHERE kind = \(bind: kind.rawValue) AND job_key = \(bind: key)")
            .first(decoding: Job.self, with: Self.decoding)
    }

    /// Whether a job of the kind (of one group) is due and unclaimed at `now` (one read of the index of due jobs).
    func hasClaimableJob(kind: JobKind, group: String, now: Int64, on db: any SQLDatabase) async throws -> Bool {
        try await db.raw(
            """
            SELECT 1 AS due FROM srv_jobs
            WHERE kind = \(bind: kind.rawValue) AND queue_group = \(bind: group) AND state = 'queued'
              AND due_at <= \(bind: now) AND (claimed_until IS NULL OR claimed_until < \(bind: now))
            LIMIT 1
            """
        ).first() != nil
    }

    /// When the next queued job of a kind that no live worker holds is due (a job under way is not waited for: its
    /// attempt's end wakes the worker).
    func nextJobDue(kind: JobKind, now: Int64, on db: any SQLDatabase) async throws -> Int64? {
        try await db.raw(
            """
            SELECT MIN(due_at) AS due FROM srv_jobs WHERE kind = \(bind: kind.rawValue) AND state = 'queued'
              AND (claimed_until IS NULL OR claimed_until < \(bind: now))
            """
        ).first()?.decode(column: "due", as: Int64?.self)
    }

    func releaseJobClaims(on db: any SQLDatabase) async throws -> [JobKind: Int] {
        var released: [JobKind: Int] = [:]
        for row in try await db.raw(
            "UPDATE srv_jobs SET claimed_until = NULL WHERE claimed_until IS NOT NULL RETURNING kind"
        ).all() {
            if let kind = JobKind(rawValue: try row.decode(column: "kind", as: String.self)) {
                released[kind, default: 0] += 1
            }
        }
        return released
    }

    // MARK: Holds

    /// Makes `holder` the holder of a kind's group until `until`, unless another holds it and `now` is before its
    /// time; answers whether `holder` is.
    func holdGroup(kind: JobKind, group: String, holder: String, until: Int64, now: Int64, on db: any SQLDatabase)
        async throws -> Bool
    {
        try await db.raw(
            """
            INSERT INTO srv_job_holds (kind, queue_group, holder, held_until)
            VALUES (\(bind: kind.rawValue), \(bind: group), \(bind: holder), \(bind: until))
            ON CONFLICT (kind, queue_group) DO UPDATE SET holder = excluded.holder, held_until = excluded.held_until
            WHERE srv_job_holds.holder = excluded.holder OR srv_job_holds.held_until <= \(bind: now)
            RETURNING holder
            """
        ).first() != nil
    }

    /// The holds of a kind's groups (of one group, when `group` is given) that have not lapsed at `now`.
    func groupHolds(kind: JobKind, group: String? = nil, now: Int64, on db: any SQLDatabase) async throws -> [JobHold] {
        let oneGroup: SQLQueryString = group.map { "AND queue_group = \(bind: $0)" } ?? ""
        return try await db.raw(
            """
            SELECT kind, queue_group, holder, held_until FROM srv_job_holds
            WHERE kind = \(bind: kind.rawValue) \(oneGroup) AND held_until > \(bind: now)
            """
        ).all(decoding: JobHold.self, with: Self.decoding)
    }

    /// `holder` stops: the groups it held are free at once.
    func releaseHolds(kind: JobKind, holder: String, on db: any SQLDatabase) async throws {
        try await db.raw(
            "DELETE FROM srv_job_holds WHERE kind = \(bind: kind.rawValue) AND holder = \(bind: holder)"
        ).run()
    }

    /// Frees every hold; answers how many groups of each kind were held.
    func releaseAllHolds(on db: any SQLDatabase) async throws -> [JobKind: Int] {
        var released: [JobKind: Int] = [:]
        for row in try await db.raw("DELETE FROM srv_job_holds RETURNING kind").all() {
            if let kind = JobKind(rawValue: try row.decode(column: "kind", as: String.self)) {
                released[kind, default: 0] += 1
            }
        }
        return released
    }

    /// How many jobs of each kind are in each state, and when the oldest queued one of each kind was due.
    package struct JobDepth: Decodable {
        package var kind: JobKind
        package var state: JobState
        package var n: Int
        package var oldestDue: Int64?
    }

    package func jobDepth() async throws -> [JobDepth] {
        try await sql.raw(
            "SELECT kind, state, COUNT(*) AS n, MIN(due_at) AS oldest_due FROM srv_jobs GROUP BY kind, state"
        ).all(decoding: JobDepth.self, with: Self.decoding)
    }

    package init(
        database: TillDatabase
    ) {
        self.database = database
    }
}

// A job's columns by hand: a webhook dispatch inserts hundreds at a time and every round claims some (docs/benchmarks.md).
// `JobQueueTests.handWrittenRowsMatchCodables` keeps them equal to Codable's.
extension Job {
    package static let columns = [
        "kind", "job_key", "state", "queue_group", "stream", "position", "attempts", "due_at", "claimed_until",
        "last_error", "created_at", "updated_at", "trace",
    ]

    /// Its values, in the order of `columns`.
    package var row: [(any Encodable & Sendable)?] {
        [
            kind.rawValue, jobKey, state.rawValue, queueGroup, stream, position, attempts, dueAt, claimedUntil,
            lastError, createdAt, updatedAt, trace,
        ]
    }

    package init(row: any SQLRow) throws {
        self.init(
            kind: try row.enumeration("kind", as: JobKind.self),
            jobKey: try row.decode(column: "job_key", as: String.self),
            state: try row.enumeration("state", as: JobState.self),
            queueGroup: try row.decode(column: "queue_group", as: String.self),
            stream: try row.optional("stream", as: String.self),
            position: try row.decode(column: "position", as: Int64.self),
            attempts: try row.decode(column: "attempts", as: Int.self),
            dueAt: try row.decode(column: "due_at", as: Int64.self),
            claimedUntil: try row.optional("claimed_until", as: Int64.self),
            lastError: try row.optional("last_error", as: String.self),
            createdAt: try row.decode(column: "created_at", as: Int64.self),
            updatedAt: try row.decode(column: "updated_at", as: Int64.self),
            trace: try row.optional("trace", as: String.self)
        )
    }
}
