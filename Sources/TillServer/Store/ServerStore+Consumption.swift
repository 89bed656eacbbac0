import Foundation
import SQLKit
import TillContract
import TillStorage

// Answering Apple's consumption requests (`ConsumptionAnswers`): the customers' consent and the durable queue of
// requests with their answers (migration 013-consumption-answers).
extension ServerStore {
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
        return (try row.decode(column: "consented", as: Bool.self), try row.decode(column: "updated_at", as: Int64.self))
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

    /// Claims up to `limit` requests whose answer is due (pending or retrying, due by `now`, not held by a live
    /// worker) until `until`. On PostgreSQL several servers share the queue (`FOR UPDATE SKIP LOCKED`).
    func claimDueConsumptionRequests(
        limit: Int,
        now: Int64,
        until: Int64,
        engine: TillDatabase.Engine,
        on db: any SQLDatabase
    ) async throws -> [ConsumptionRequestRecord] {
        let lock = engine == .postgres ? "FOR UPDATE SKIP LOCKED" : ""
        return try await db.raw(
            """
            UPDATE srv_consumption_requests SET claimed_until = \(bind: until)
            WHERE notification_uuid IN (
                SELECT notification_uuid FROM srv_consumption_requests
                WHERE state IN ('pending', 'retrying') AND next_attempt_at <= \(bind: now)
                  AND (claimed_until IS NULL OR claimed_until < \(bind: now))
                ORDER BY next_attempt_at LIMIT \(literal: limit) \(unsafeRaw: lock))
            RETURNING *
            """
        ).all(decoding: ConsumptionRequestRecord.self, with: Self.decoding)
    }

    /// When the next open request is due (UNIX ms), if any is open.
    func nextConsumptionRequestDue() async throws -> Int64? {
        try await sql.raw(
            """
            SELECT MIN(next_attempt_at) AS due FROM srv_consumption_requests WHERE state IN ('pending', 'retrying')
            """
        ).first()?.decode(column: "due", as: Int64?.self)
    }

    /// Clears every claim (only for a process that knows no other worker is alive: the owner of an SQLite file);
    /// returns how many requests were held.
    func releaseConsumptionClaims() async throws -> Int {
        try await sql.raw(
            """
            UPDATE srv_consumption_requests SET claimed_until = NULL WHERE claimed_until IS NOT NULL
            RETURNING notification_uuid
            """
        ).all().count
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
            SELECT * FROM srv_consumption_requests
            WHERE bundle_id = \(bind: bundleId) AND (\(bind: state) IS NULL OR state = \(bind: state))
              AND (created_at < \(bind: before.number)
                   OR (created_at = \(bind: before.number) AND notification_uuid < \(bind: before.text)))
            ORDER BY created_at DESC, notification_uuid DESC LIMIT \(literal: limit)
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
            "SELECT * FROM srv_consumption_requests WHERE notification_uuid = \(bind: notificationUuid)"
        ).first(decoding: ConsumptionRequestRecord.self, with: Self.decoding)
    }
}
