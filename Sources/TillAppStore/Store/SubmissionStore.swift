import Foundation
import SQLKit
import TillCatalogue
import TillContract
import TillCore
import TillJobs
import TillLedger
import TillStorage

/// The submissions (`Intake`, `ConfirmationQueue`): each one, what the app sent, and its attempts.
struct SubmissionStore: ServerSQLStore {
    let database: TillDatabase

    // MARK: Submissions

    func insert(_ submission: SubmissionRecord, on db: any SQLDatabase) async throws {
        try await db.run(
            RecordStatements.insert(
                into: "srv_submissions",
                columns: SubmissionRecord.columns,
                rows: [submission.values]
            )
        )
    }

    /// What the app sent for a submission (written once, with the submission).
    func insertPayload(submissionId: String, payload: String, on db: any SQLDatabase) async throws {
        try await db.run(Self.insertPayload(submissionId, payload))
    }

    private static let insertPayload = FixedStatement(
        "INSERT INTO srv_submission_payloads (id, payload) VALUES (?1, ?2)"
    )

    func payload(submissionId: String, on db: any SQLDatabase) async throws -> String? {
        try await db.raw("SELECT payload FROM srv_submission_payloads WHERE id = \(bind: submissionId)").first()?
            .decode(column: "payload", as: String.self)
    }

    func update(_ submission: SubmissionRecord, on db: any SQLDatabase) async throws {
        try await db.run(
            RecordStatements.update(
                "srv_submissions",
                columns: SubmissionRecord.columns,
                values: submission.values,
                keys: ["id"]
            )
        )
    }

    /// A submission's columns, and when its confirmation job is due (the queue owns that time).
    private static let withJobText = """
        SELECT s.*, j.due_at AS next_attempt_at FROM srv_submissions s
        LEFT JOIN srv_jobs j ON j.kind = 'confirmation' AND j.job_key = s.id AND j.state = 'queued'
        """
    private static let withJob = SQLQueryString(withJobText)

    /// One submission; `locking`: its row is held until the end of `db`'s transaction (PostgreSQL: `FOR UPDATE`; SQLite
    /// has one writer already), for a change that reads it first: an attempt's outcome, an operator's retry.
    func submission(id: String, locking: Bool = false, on db: any SQLDatabase) async throws -> SubmissionRecord? {
        try await db.first((locking ? Self.lockedById : Self.byId)(id)).map(SubmissionRecord.init(row:))
    }

    private static let byId = FixedStatement(withJobText + " WHERE s.id = ?1")
    /// `FOR UPDATE` of the submission's row (not the job's, on the nullable side of the join) on PostgreSQL.
    private static let lockedById = FixedStatement(
        sqlite: withJobText + " WHERE s.id = ?1",
        postgres: withJobText + " WHERE s.id = ?1 FOR UPDATE OF s"
    )

    /// `FOR UPDATE` of the submission's row (not the job's, on the nullable side of the join) on PostgreSQL.
    private func lock(_ locking: Bool) -> SQLQueryString {
        locking && database.engine == .postgres ? " FOR UPDATE OF s" : ""
    }

    func submission(bundleId: String, idempotencyKey: String, on db: any SQLDatabase) async throws -> SubmissionRecord?
    {
        try await db.raw(
            "\(Self.withJob) WHERE s.bundle_id = \(bind: bundleId) AND s.idempotency_key = \(bind: idempotencyKey)"
        ).firstSubmission()
    }

    /// The submissions with these ids (the ones a claim of confirmation jobs named).
    func submissions(ids: [String], on db: any SQLDatabase) async throws -> [SubmissionRecord] {
        guard !ids.isEmpty else { return [] }
        return try await db.raw("SELECT * FROM srv_submissions WHERE id IN (\(binds: ids))").submissionRows()
    }

    /// Submissions in a state, oldest change first (by `updated_at`, then `id`), after `after`, at most `limit`.
    func submissions(state: SubmissionState, after: PageKey?, limit: Int, locking: Bool = false, on db: any SQLDatabase)
        async throws -> [SubmissionRecord]
    {
        let after = after ?? PageKey(number: Int64.min, text: "")
        return try await db.raw(
            """
            \(Self.withJob) WHERE s.state = \(bind: state.rawValue)
              AND (s.updated_at > \(bind: after.number) OR (s.updated_at = \(bind: after.number) AND s.id > \(bind: after.text)))
            ORDER BY s.updated_at, s.id LIMIT \(literal: limit)\(lock(locking))
            """
        ).submissionRows()
    }

    /// Makes the confirmations of the submissions waiting to retry for `cause` (of one app, or all) due at `now`;
    /// answers how many.
    func bringForward(cause: RetryCause, bundleId: String?, at now: Int64) async throws -> Int {
        try await database.transaction(bookkeeping: true) { db in
            try await JobStore(database: self.database).bringJobsForward(
                kind: .confirmation,
                keys: """
                    SELECT id FROM srv_submissions
                    WHERE state = 'retrying' AND retry_cause = \(bind: cause.rawValue)
                      AND (\(bind: bundleId) IS NULL OR bundle_id = \(bind: bundleId))
                    """,
                at: now,
                on: db
            ).count
        }
    }

    func count(state: SubmissionState, on db: any SQLDatabase) async throws -> Int {
        try await db.raw("SELECT COUNT(*) AS n FROM srv_submissions WHERE state = \(bind: state.rawValue)").first()?
            .decode(column: "n", as: Int.self) ?? 0
    }
}

extension SubmissionStore {
    /// How many submissions wait in each unsettled state, and since when the oldest of them.
    struct QueueDepth: Decodable {
        var state: SubmissionState
        var n: Int
        var oldest: Int64?
    }

    func queueDepth() async throws -> [QueueDepth] {
        try await sql.raw(
            """
            SELECT state, COUNT(*) AS n, MIN(created_at) AS oldest FROM srv_submissions
            WHERE state IN (\(bind: SubmissionState.pending.rawValue), \(bind: SubmissionState.retrying.rawValue),
                            \(bind: SubmissionState.deadLettered.rawValue))
            GROUP BY state
            """
        ).all(decoding: QueueDepth.self)
    }
}

// Each confirmation attempt (migration 020-console).
extension SubmissionStore {
    /// Records an attempt as the submission's next (its `number` is the last one's plus one).
    func insert(_ attempt: SubmissionAttemptRecord, on db: any SQLDatabase) async throws {
        try await db.run(
            Self.insertAttempt(
                attempt.submissionId,
                attempt.at,
                attempt.environment.rawValue,
                attempt.outcome.rawValue,
                attempt.status,
                attempt.error,
                attempt.retryCause?.rawValue,
                attempt.duration
            )
        )
    }

    private static let insertAttempt = FixedStatement(
        """
        INSERT INTO srv_submission_attempts (submission_id, number, at, environment, outcome, status, error,
            retry_cause, duration)
        SELECT ?1, COALESCE(MAX(number), 0) + 1, ?2, ?3, ?4, ?5, ?6, ?7, ?8
        FROM srv_submission_attempts WHERE submission_id = ?1
        """
    )
}
