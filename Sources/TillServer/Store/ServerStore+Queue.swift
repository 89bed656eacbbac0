import Foundation
import SQLKit
import TillContract
import TillCore
import TillStorage

// The confirmation queue's, the revenue report's and the metrics' SQL: every statement the services run is here,
// behind a name, with the store's other SQL.
extension ServerStore {
    /// Claims up to `limit` due submissions (pending or retrying, due by `now`, not claimed by a live worker) until
    /// `until`, and returns them. On PostgreSQL several servers share the queue (`FOR UPDATE SKIP LOCKED`); on
    /// SQLite one process owns it.
    func claimDue(limit: Int, now: Int64, until: Int64, engine: TillDatabase.Engine, on db: any SQLDatabase)
        async throws
        -> [SubmissionRecord]
    {
        let lock = engine == .postgres ? "FOR UPDATE SKIP LOCKED" : ""
        return try await db.raw(
            """
            UPDATE srv_submissions SET claimed_until = \(bind: until)
            WHERE id IN (
                SELECT id FROM srv_submissions
                WHERE state IN (\(bind: SubmissionState.pending.rawValue), \(bind: SubmissionState.retrying.rawValue))
                  AND next_attempt_at <= \(bind: now)
                  AND (claimed_until IS NULL OR claimed_until < \(bind: now))
                ORDER BY next_attempt_at LIMIT \(literal: limit) \(unsafeRaw: lock))
            RETURNING *
            """
        ).all(decoding: SubmissionRecord.self, with: Self.decoding)
    }

    /// Moves a submission's transactions and their money to `environment` (an iOS 6-style receipt claims its
    /// environment without signing it: Apple's answer decides).
    func moveEnvironment(of submission: SubmissionRecord, to environment: AppStoreEnvironment, on db: any SQLDatabase)
        async throws
    {
        try await db.raw(
            """
            UPDATE srv_transactions SET environment = \(bind: environment.rawValue)
            WHERE submission_id = \(bind: submission.id) AND environment = \(bind: submission.environment)
            """
        ).run()
        try await db.raw(
            """
            UPDATE srv_finance SET environment = \(bind: environment.rawValue)
            WHERE environment = \(bind: submission.environment) AND transaction_id IN (
                SELECT transaction_id FROM srv_transactions WHERE submission_id = \(bind: submission.id))
            """
        ).run()
    }

    /// One production money entry, as the revenue report reads it.
    struct FinanceRow: Decodable {
        var productId: String
        var currency: String
        var amount: Int64
        var occurredAt: Int64
    }

    /// The production money entries between `from` (included) and `to` (excluded), of one app or all.
    func productionFinance(bundleId: String?, from: Int64, to: Int64) async throws -> [FinanceRow] {
        var query = sql.select().columns("product_id", "currency", "amount", "occurred_at").from("srv_finance")
            .where("environment", .equal, AppStoreEnvironment.production.rawValue)
            .where("occurred_at", .greaterThanOrEqual, from).where("occurred_at", .lessThan, to)
        if let bundleId { query = query.where("bundle_id", .equal, bundleId) }
        return try await query.all(decoding: FinanceRow.self, with: Self.decoding)
    }

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
