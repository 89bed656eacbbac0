import Foundation
import SQLKit
import TillAppStore
import TillCatalogue
import TillContract
import TillCore
import TillLedger
import TillStorage

/// What the operator's console reads (migration 020-console): a customer's timeline and the searches that find a
/// customer, the notifications log. Each read is on an index (`ConsoleQueryPlanTests` checks the plans), and each list
/// is bounded. The console's own sessions and actions are `ConsoleStore`'s.
struct TimelineStore: ServerSQLStore {
    let database: TillDatabase

    // MARK: A customer's timeline

    /// The newest `limit` rows of these customers (an account and its guests), newest first by `at`: each id read on
    /// its own, on its own index (`bundle_id, customer_id, <time>`), then merged.
    ///
    /// Not one `customer_id IN (…)`: with two ids or more, SQLite (without statistics) walks the app's whole index
    /// on the order asked for (`bundle_id, sequence`) until it has found `limit` rows, that is all of the app's rows
    /// for a customer with fewer: 1.7 s for a customer and its guest on `till bench ledger`'s million events,
    /// against a fraction of a millisecond per id this way.
    private func newest<Row>(
        of customerIds: [String],
        limit: Int,
        at: (Row) -> Int64,
        _ read: (String) async throws -> [Row]
    ) async throws -> [Row] {
        var rows: [Row] = []
        for customerId in customerIds { rows += try await read(customerId) }
        return Array(rows.sorted { at($0) > at($1) }.prefix(limit))
    }

    /// The newest events of these customers of an app (an account and its guests), newest first.
    func newestEvents(bundleId: String, customerIds: [String], limit: Int, on db: any SQLDatabase) async throws
        -> [EventRecord]
    {
        try await newest(of: customerIds, limit: limit, at: \.sequence) { customerId in
            try await db.select().column("*").from("srv_events").where("bundle_id", .equal, bundleId)
                .where("customer_id", .equal, customerId).orderBy("sequence", .descending).limit(limit)
                .all(decoding: EventRecord.self, with: Self.decoding)
        }
    }

    /// The newest submissions of these customers, newest first.
    func newestSubmissions(bundleId: String, customerIds: [String], limit: Int, on db: any SQLDatabase) async throws
        -> [SubmissionRecord]
    {
        try await newest(of: customerIds, limit: limit, at: \.createdAt) { customerId in
            try await db.select().column("*").from("srv_submissions").where("bundle_id", .equal, bundleId)
                .where("customer_id", .equal, customerId).orderBy("created_at", .descending).limit(limit)
                .all(decoding: SubmissionRecord.self, with: Self.decoding)
        }
    }

    /// The newest notifications applied to these customers, newest first.
    func newestNotifications(bundleId: String, customerIds: [String], limit: Int, on db: any SQLDatabase)
        async throws -> [NotificationRecord]
    {
        try await newest(of: customerIds, limit: limit, at: \.receivedAt) { customerId in
            try await db.select().column("*").from("srv_notifications").where("bundle_id", .equal, bundleId)
                .where("customer_id", .equal, customerId).orderBy("received_at", .descending).limit(limit)
                .all(decoding: NotificationRecord.self, with: Self.decoding)
        }
    }

    /// The newest consumption requests about these customers' purchases, newest first.
    func newestConsumptionRequests(bundleId: String, customerIds: [String], limit: Int, on db: any SQLDatabase)
        async throws -> [ConsumptionRequestRecord]
    {
        try await newest(of: customerIds, limit: limit, at: \.requestedAt) { customerId in
            try await db.select().column("*").from("srv_consumption_requests").where("bundle_id", .equal, bundleId)
                .where("customer_id", .equal, customerId).orderBy("requested_at", .descending).limit(limit)
                .all(decoding: ConsumptionRequestRecord.self, with: Self.decoding)
        }
    }

    func insert(_ activity: CustomerActivity, on db: any SQLDatabase) async throws {
        try await db.run(RecordStatements.insert(into: "srv_customer_activity", activity, with: Self.encoding))
    }

    /// What was done for these customers besides the ledger (offers signed, download links), newest first.
    func newestActivity(bundleId: String, customerIds: [String], limit: Int, on db: any SQLDatabase) async throws
        -> [CustomerActivity]
    {
        try await newest(of: customerIds, limit: limit, at: \.at) { customerId in
            try await db.select().column("*").from("srv_customer_activity").where("bundle_id", .equal, bundleId)
                .where("customer_id", .equal, customerId).orderBy("at", .descending).limit(limit)
                .all(decoding: CustomerActivity.self, with: Self.decoding)
        }
    }

    /// The attempts of these submissions, in order.
    func attempts(submissionIds: [String], on db: any SQLDatabase) async throws -> [SubmissionAttemptRecord] {
        guard !submissionIds.isEmpty else { return [] }
        return try await db.select().column("*").from("srv_submission_attempts")
            .where("submission_id", .in, submissionIds).orderBy("submission_id").orderBy("number")
            .all(decoding: SubmissionAttemptRecord.self, with: Self.decoding)
    }
}
