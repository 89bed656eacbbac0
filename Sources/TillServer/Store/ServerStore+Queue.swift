import Foundation
import SQLKit
import TillContract
import TillCore
import TillStorage

// The revenue report's and the metrics' SQL: every statement the services run is here,
// behind a name, with the store's other SQL.
extension ServerStore {
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
