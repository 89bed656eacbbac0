import Foundation
import SQLKit
import TillCatalogue
import TillContract
import TillLedger
import TillStorage

/// Answering Apple's consumption requests (`ConsumptionAnswers`): the customers' consent and the durable queue of
/// requests with their answers (migration 013-consumption-answers).
struct ConsumptionStore: ServerSQLStore {
    let database: TillDatabase

    // MARK: Consent

    /// A customer's consent (the id as stored: an account, aliases resolved by the caller), and when it was given.
    func consumptionConsent(bundleId: String, customerId: String, on db: any SQLDatabase) async throws
        -> (consented: Bool, updatedAt: Int64)?
    {
        guard
            let row = try await db.raw(
                """
                SELECT consented, updated_at FROM srv_consumption_consents
                WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: customerId)
                """
            ).first()
        else { return nil }
        return (
            try row.decode(column: "consented", as: Bool.self), try row.decode(column: "updated_at", as: Int64.self)
        )
    }

    func saveConsumptionConsent(
        bundleId: String,
        customerId: String,
        consented: Bool,
        at now: Int64,
        on db: any SQLDatabase
    ) async throws {
        try await db.raw(
            """
            INSERT INTO srv_consumption_consents (bundle_id, customer_id, consented, updated_at)
            VALUES (\(bind: bundleId), \(bind: customerId), \(bind: consented), \(bind: now))
            ON CONFLICT (bundle_id, customer_id) DO UPDATE
            SET consented = excluded.consented, updated_at = excluded.updated_at
            """
        ).run()
    }

    // MARK: Requests

    func insert(_ request: ConsumptionRequestRecord, on db: any SQLDatabase) async throws {
        try await db.run(RecordStatements.insert(into: "srv_consumption_requests", request, with: Self.encoding))
    }

    func update(_ request: ConsumptionRequestRecord, on db: any SQLDatabase) async throws {
        try await db.run(
            RecordStatements.update(
                "srv_consumption_requests",
                request,
                keys: ["notification_uuid"],
                with: Self.encoding
            )
        )
    }

    /// A request's columns, and when its job is due (the queue owns that time).
    private static let requestWithJob: SQLQueryString = """
        SELECT r.*, j.due_at AS next_attempt_at FROM srv_consumption_requests r
        LEFT JOIN srv_jobs j ON j.kind = 'consumptionAnswer' AND j.job_key = r.notification_uuid AND j.state = 'queued'
        """

    /// The requests with these notification UUIDs (the ones a claim of jobs named).
    func consumptionRequests(notificationUuids: [String], on db: any SQLDatabase) async throws
        -> [ConsumptionRequestRecord]
    {
        guard !notificationUuids.isEmpty else { return [] }
        return try await db.select().column("*").from("srv_consumption_requests")
            .where("notification_uuid", .in, notificationUuids)
            .all(decoding: ConsumptionRequestRecord.self, with: Self.decoding)
    }

    /// The app's requests, newest first (by `created_at`, then UUID), before `before`, at most `limit`; of one
    /// state, or all.
    func consumptionRequests(
        bundleId: String,
        state: String?,
        before: PageKey?,
        limit: Int,
        on db: any SQLDatabase
    ) async throws -> [ConsumptionRequestRecord] {
        let before = before ?? PageKey(number: Int64.max, text: "")
        return try await db.raw(
            """
            \(Self.requestWithJob)
            WHERE r.bundle_id = \(bind: bundleId) AND (\(bind: state) IS NULL OR r.state = \(bind: state))
              AND (r.created_at < \(bind: before.number)
                   OR (r.created_at = \(bind: before.number) AND r.notification_uuid < \(bind: before.text)))
            ORDER BY r.created_at DESC, r.notification_uuid DESC LIMIT \(literal: limit)
            """
        ).all(decoding: ConsumptionRequestRecord.self, with: Self.decoding)
    }

    func countConsumptionRequests(bundleId: String, state: String?, on db: any SQLDatabase) async throws -> Int {
        try await db.raw(
            """
            SELECT COUNT(*) AS n FROM srv_consumption_requests
            WHERE bundle_id = \(bind: bundleId) AND (\(bind: state) IS NULL OR state = \(bind: state))
            """
        ).first()?.decode(column: "n", as: Int.self) ?? 0
    }

    func consumptionRequest(notificationUuid: String, on db: any SQLDatabase) async throws
        -> ConsumptionRequestRecord?
    {
        try await db.raw(
            "\(Self.requestWithJob) WHERE r.notification_uuid = \(bind: notificationUuid)"
        ).first(decoding: ConsumptionRequestRecord.self, with: Self.decoding)
    }
}
