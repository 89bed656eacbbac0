import Foundation
import SQLKit
import TillContract
import TillJobs
import TillLedger
import TillStorage

/// Webhooks (`WebhookEndpoints`, `WebhookDeliveries`): the apps' endpoints, the deliveries of events to them and every
/// attempt (migration 019-events). Their schedule is the job queue's (`srv_jobs`, kind `delivery`), written by
/// `jobStore`.
struct WebhookStore: ServerSQLStore {
    let database: TillDatabase
    var jobStore: JobStore { JobStore(database: database) }
    /// The events the deliveries carry.
    var eventStore: EventStore { EventStore(database: database) }

    // MARK: Endpoints

    func insert(_ endpoint: WebhookEndpointRecord, on db: any SQLDatabase) async throws {
        try await db.run(RecordStatements.insert(into: "srv_webhook_endpoints", endpoint, with: Self.encoding))
    }

    func update(_ endpoint: WebhookEndpointRecord, on db: any SQLDatabase) async throws {
        try await db.run(
            RecordStatements.update("srv_webhook_endpoints", endpoint, keys: ["id"], with: Self.encoding)
        )
    }

    /// An endpoint; `locking`: held until the end of `db`'s transaction (PostgreSQL: `FOR UPDATE`), so that a change
    /// of its settings does not write back a cursor or a failure count another transaction moved meanwhile.
    func webhookEndpoint(id: String, locking: Bool = false, on db: any SQLDatabase) async throws
        -> WebhookEndpointRecord?
    {
        let lock: SQLQueryString = locking && database.engine == .postgres ? " FOR UPDATE" : ""
        return try await db.raw("SELECT * FROM srv_webhook_endpoints WHERE id = \(bind: id)\(lock)")
            .first(decoding: WebhookEndpointRecord.self, with: Self.decoding)
    }

    /// Moves an endpoint's dispatch cursor (its row held by `lockWebhookEndpoint`).
    func moveCursor(endpointId: String, to sequence: Int64, at now: Int64, on db: any SQLDatabase) async throws {
        try await db.raw(
            """
            UPDATE srv_webhook_endpoints SET dispatched_through = \(bind: sequence), updated_at = \(bind: now)
            WHERE id = \(bind: endpointId)
            """
        ).run()
    }

    // MARK: Sending at dispatch

    /// Moves the cursor of an endpoint whose events were sent at dispatch from `from` to `through`; answers false,
    /// changing nothing, when the cursor moved meanwhile (another worker dispatched those events).
    func moveCursor(endpointId: String, from: Int64, to through: Int64, at now: Int64, on db: any SQLDatabase)
        async throws -> Bool
    {
        try await db.raw(
            """
            UPDATE srv_webhook_endpoints SET dispatched_through = \(bind: through), updated_at = \(bind: now)
            WHERE id = \(bind: endpointId) AND dispatched_through = \(bind: from)
            RETURNING id
            """
        ).first() != nil
    }

    /// Which of these delivery streams have a delivery queued or under way (the next of the stream waits for it).
    func busyDeliveryStreams(_ streams: [String], on db: any SQLDatabase) async throws -> Set<String> {
        guard !streams.isEmpty else { return [] }
        return Set(
            try await db.raw(
                """
                SELECT DISTINCT stream FROM srv_jobs
                WHERE kind = 'delivery' AND stream IN (\(binds: streams)) AND state = 'queued'
                """
            ).all().map { try $0.decode(column: "stream", as: String.self) }
        )
    }

    /// An app's endpoints, oldest first (by `created_at`, then id), after `after`, at most `limit`.
    func webhookEndpoints(bundleId: String, after: PageKey?, limit: Int, on db: any SQLDatabase) async throws
        -> [WebhookEndpointRecord]
    {
        let after = after ?? PageKey(number: Int64.min, text: "")
        return try await db.raw(
            """
            SELECT * FROM srv_webhook_endpoints WHERE bundle_id = \(bind: bundleId)
              AND (created_at > \(bind: after.number) OR (created_at = \(bind: after.number) AND id > \(bind: after.text)))
            ORDER BY created_at, id LIMIT \(literal: limit)
            """
        ).all(decoding: WebhookEndpointRecord.self, with: Self.decoding)
    }

    func countWebhookEndpoints(bundleId: String, on db: any SQLDatabase) async throws -> Int {
        try await db.raw("SELECT COUNT(*) AS n FROM srv_webhook_endpoints WHERE bundle_id = \(bind: bundleId)")
            .first()?.decode(column: "n", as: Int.self) ?? 0
    }

    /// Every enabled endpoint (the worker's list).
    func enabledWebhookEndpoints(on db: any SQLDatabase) async throws -> [WebhookEndpointRecord] {
        try await db.raw("SELECT * FROM srv_webhook_endpoints WHERE enabled = \(bind: true) ORDER BY created_at, id")
            .all(decoding: WebhookEndpointRecord.self, with: Self.decoding)
    }

    /// The endpoint, held until the end of `db`'s transaction for the one process that makes its deliveries; nil
    /// when another holds it (PostgreSQL: `FOR UPDATE SKIP LOCKED`; SQLite has one writer already) or it is gone.
    func lockWebhookEndpoint(id: String, on db: any SQLDatabase) async throws -> WebhookEndpointRecord? {
        let lock: SQLQueryString = database.engine == .postgres ? " FOR UPDATE SKIP LOCKED" : ""
        return try await db.raw("SELECT * FROM srv_webhook_endpoints WHERE id = \(bind: id)\(lock)")
            .first(decoding: WebhookEndpointRecord.self, with: Self.decoding)
    }

    /// Removes an endpoint with its deliveries, their attempts and their jobs.
    func deleteWebhookEndpoint(id: String, on db: any SQLDatabase) async throws {
        try await jobStore.deleteJobs(kind: .delivery, group: id, on: db)
        try await db.raw(
            """
            DELETE FROM srv_webhook_attempts WHERE delivery_id IN (
                SELECT id FROM srv_webhook_deliveries WHERE endpoint_id = \(bind: id))
            """
        ).run()
        try await db.raw("DELETE FROM srv_webhook_deliveries WHERE endpoint_id = \(bind: id)").run()
        try await db.raw("DELETE FROM srv_webhook_endpoints WHERE id = \(bind: id)").run()
    }

    /// An attempt succeeded: the endpoint's failures end. Answers whether it had been failing. (Its last success is
    /// written at most once a second otherwise: every delivery of a busy endpoint would rewrite its row.)
    func webhookEndpointSucceeded(id: String, at now: Int64, on db: any SQLDatabase) async throws -> Bool {
        let recovered =
            try await db.raw(
                """
                UPDATE srv_webhook_endpoints SET consecutive_failures = 0, last_success_at = \(bind: now)
                WHERE id = \(bind: id) AND consecutive_failures > 0 RETURNING id
                """
            ).first() != nil
        if !recovered {
            try await db.raw(
                """
                UPDATE srv_webhook_endpoints SET last_success_at = \(bind: now)
                WHERE id = \(bind: id) AND (last_success_at IS NULL OR last_success_at < \(bind: now - 1000))
                """
            ).run()
        }
        return recovered
    }

    func webhookEndpointFailed(id: String, at now: Int64, on db: any SQLDatabase) async throws {
        try await db.raw(
            """
            UPDATE srv_webhook_endpoints SET consecutive_failures = consecutive_failures + 1, last_failure_at = \(bind: now)
            WHERE id = \(bind: id)
            """
        ).run()
    }

    /// Makes an endpoint's queued deliveries due now (it answers again); answers how many.
    func bringDeliveriesForward(endpointId: String, at now: Int64, on db: any SQLDatabase) async throws -> Int {
        try await jobStore.bringJobsForward(kind: .delivery, group: endpointId, at: now, on: db).count
    }

    // MARK: Deliveries

    func insert(_ delivery: WebhookDeliveryRecord, on db: any SQLDatabase) async throws {
        try await db.run(RecordStatements.insert(into: "srv_webhook_deliveries", delivery, with: Self.encoding))
    }

    /// Deliveries and their jobs, each set in one statement (a dispatch makes many at once).
    func insert(_ deliveries: [WebhookDeliveryRecord], jobs: [Job], on db: any SQLDatabase) async throws {
        guard !deliveries.isEmpty else { return }
        try await db.run(
            RecordStatements.insert(
                into: "srv_webhook_deliveries",
                columns: WebhookDeliveryRecord.columns,
                rows: deliveries.map(\.row)
            )
        )
        try await jobStore.insertJobs(jobs, on: db)
    }

    /// One delivery to attempt, with what its event's body needs.
    struct DeliveryToSend: Sendable {
        var delivery: WebhookDeliveryRecord
        var body: String
        var occurredAt: Int64
        /// The event's trace (docs/tracing.md).
        var trace: String?
    }

    /// The deliveries with these ids, each with its event's body, in one read.
    func deliveriesToSend(ids: [String], on db: any SQLDatabase) async throws -> [DeliveryToSend] {
        guard !ids.isEmpty else { return [] }
        return try await db.raw(
            """
            SELECT d.*, e.body, e.occurred_at AS event_occurred_at, e.trace AS event_trace FROM srv_webhook_deliveries d
            JOIN srv_events e ON e.sequence = d.event_sequence
            WHERE d.id IN (\(binds: ids))
            """
        ).all().map { row in
            DeliveryToSend(
                delivery: try WebhookDeliveryRecord(row: row),
                body: try row.decode(column: "body", as: String.self),
                occurredAt: try row.decode(column: "event_occurred_at", as: Int64.self),
                trace: try row.optional("event_trace", as: String.self)
            )
        }
    }

    /// A delivery delivered: the columns its last attempt changed (the others and their indexes stay).
    func markDelivered(_ delivery: WebhookDeliveryRecord, on db: any SQLDatabase) async throws {
        try await db.raw(
            """
            UPDATE srv_webhook_deliveries SET state = 'delivered', attempts = \(bind: delivery.attempts),
                delivered_at = \(bind: delivery.deliveredAt), last_attempt_at = \(bind: delivery.lastAttemptAt),
                last_status = \(bind: delivery.lastStatus), last_error = NULL, last_answer = \(bind: delivery.lastAnswer),
                last_url = \(bind: delivery.lastUrl), last_duration = \(bind: delivery.lastDuration),
                updated_at = \(bind: delivery.updatedAt)
            WHERE id = \(bind: delivery.id)
            """
        ).run()
    }

    func update(_ delivery: WebhookDeliveryRecord, on db: any SQLDatabase) async throws {
        try await db.run(
            RecordStatements.update("srv_webhook_deliveries", delivery, keys: ["id"], with: Self.encoding)
        )
    }

    func insert(_ attempt: WebhookAttemptRecord, on db: any SQLDatabase) async throws {
        try await db.run(RecordStatements.insert(into: "srv_webhook_attempts", attempt, with: Self.encoding))
    }

    /// A delivery's columns, and when its job is due (the queue owns that time).
    private static let deliveryWithJob: SQLQueryString = """
        SELECT d.*, j.due_at AS next_attempt_at FROM srv_webhook_deliveries d
        LEFT JOIN srv_jobs j ON j.kind = 'delivery' AND j.job_key = d.id AND j.state = 'queued'
        """

    func webhookDeliveries(ids: [String], on db: any SQLDatabase) async throws -> [WebhookDeliveryRecord] {
        guard !ids.isEmpty else { return [] }
        return try await db.select().column("*").from("srv_webhook_deliveries").where("id", .in, ids)
            .all(decoding: WebhookDeliveryRecord.self, with: Self.decoding)
    }

    func webhookDelivery(id: String, on db: any SQLDatabase) async throws -> WebhookDeliveryRecord? {
        try await db.raw("\(Self.deliveryWithJob) WHERE d.id = \(bind: id)")
            .first(decoding: WebhookDeliveryRecord.self, with: Self.decoding)
    }

    /// An endpoint's deliveries, newest first (by `created_at`, then id), before `before`, at most `limit`; of one
    /// state, or all.
    func webhookDeliveries(
        endpointId: String,
        state: WebhookDeliveryState?,
        before: PageKey?,
        limit: Int,
        on db: any SQLDatabase
    ) async throws -> [WebhookDeliveryRecord] {
        let before = before ?? PageKey(number: Int64.max, text: "")
        // A state's condition only when one is given: the index of states serves it, the endpoint's the others.
        let ofState: SQLQueryString = state.map { "AND d.state = \(bind: $0.rawValue)" } ?? ""
        return try await db.raw(
            """
            \(Self.deliveryWithJob)
            WHERE d.endpoint_id = \(bind: endpointId) \(ofState)
              AND (d.created_at < \(bind: before.number) OR (d.created_at = \(bind: before.number) AND d.id < \(bind: before.text)))
            ORDER BY d.created_at DESC, d.id DESC LIMIT \(literal: limit)
            """
        ).all(decoding: WebhookDeliveryRecord.self, with: Self.decoding)
    }

    func countWebhookDeliveries(endpointId: String, state: WebhookDeliveryState?, on db: any SQLDatabase)
        async throws -> Int
    {
        let ofState: SQLQueryString = state.map { "AND state = \(bind: $0.rawValue)" } ?? ""
        return try await db.raw(
            "SELECT COUNT(*) AS n FROM srv_webhook_deliveries WHERE endpoint_id = \(bind: endpointId) \(ofState)"
        ).first()?.decode(column: "n", as: Int.self) ?? 0
    }

    /// Whether a delivery of this event to this endpoint is still to be made.
    func hasPendingDelivery(endpointId: String, eventSequence: Int64, on db: any SQLDatabase) async throws -> Bool {
        try await db.raw(
            """
            SELECT 1 AS found FROM srv_webhook_deliveries
            WHERE endpoint_id = \(bind: endpointId) AND state = 'pending' AND event_sequence = \(bind: eventSequence)
            LIMIT 1
            """
        ).first() != nil
    }

    func webhookAttempts(deliveryId: String, on db: any SQLDatabase) async throws -> [WebhookAttemptRecord] {
        try await db.raw("SELECT * FROM srv_webhook_attempts WHERE delivery_id = \(bind: deliveryId) ORDER BY attempt")
            .all(decoding: WebhookAttemptRecord.self, with: Self.decoding)
    }

    /// Dead-letters the pending deliveries whose deadline passed without being under way (an endpoint that stayed
    /// down longer than the retries last); answers their ids.
    func deadLetterExpiredDeliveries(at now: Int64, on db: any SQLDatabase) async throws -> [String] {
        let expired = try await db.raw(
            """
            UPDATE srv_webhook_deliveries SET state = 'deadLettered', updated_at = \(bind: now),
                last_error = COALESCE(last_error, 'not delivered before its deadline')
            WHERE state = 'pending' AND deadline < \(bind: now) AND id IN (
                SELECT job_key FROM srv_jobs WHERE kind = 'delivery' AND state = 'queued'
                  AND (claimed_until IS NULL OR claimed_until < \(bind: now)))
            RETURNING id
            """
        ).all().map { try $0.decode(column: "id", as: String.self) }
        for id in expired {
            try await jobStore.deadLetterJob(kind: .delivery, key: id, error: nil, now: now, on: db)
        }
        return expired
    }

    // MARK: Events for deliveries

    /// The events with these sequences.
    func events(sequences: [Int64], on db: any SQLDatabase) async throws -> [EventRecord] {
        guard !sequences.isEmpty else { return [] }
        return try await db.select().column("*").from("srv_events").where("sequence", .in, sequences)
            .all(decoding: EventRecord.self, with: Self.decoding)
    }
}

// A delivery's columns by hand: a dispatch inserts hundreds at a time and every round reads the ones it claims
// (docs/benchmarks.md). `WebhookWorkerTests.handWrittenRowsMatchCodables` keeps them equal to Codable's.
extension WebhookDeliveryRecord {
    static let columns = [
        "id", "endpoint_id", "bundle_id", "event_sequence", "event_id", "event_type", "customer_id", "state",
        "attempts",
        "replay", "deadline", "delivered_at", "last_attempt_at", "last_status", "last_error", "last_answer", "last_url",
        "last_duration", "created_at", "updated_at",
    ]

    /// Its values, in the order of `columns`.
    var row: [(any Encodable & Sendable)?] {
        [
            id, endpointId, bundleId, eventSequence, eventId, eventType.rawValue, customerId, state.rawValue, attempts,
            replay, deadline, deliveredAt, lastAttemptAt, lastStatus, lastError, lastAnswer, lastUrl, lastDuration,
            createdAt, updatedAt,
        ]
    }

    /// A row of `srv_webhook_deliveries` (with `next_attempt_at`, the job's due time, when the query joined it).
    init(row: any SQLRow) throws {
        self.init(
            id: try row.decode(column: "id", as: String.self),
            endpointId: try row.decode(column: "endpoint_id", as: String.self),
            bundleId: try row.decode(column: "bundle_id", as: String.self),
            eventSequence: try row.decode(column: "event_sequence", as: Int64.self),
            eventId: try row.decode(column: "event_id", as: String.self),
            eventType: try row.enumeration("event_type", as: EventType.self),
            customerId: try row.optional("customer_id", as: String.self),
            state: try row.enumeration("state", as: WebhookDeliveryState.self),
            attempts: try row.decode(column: "attempts", as: Int.self),
            replay: try row.decode(column: "replay", as: Bool.self),
            deadline: try row.decode(column: "deadline", as: Int64.self),
            deliveredAt: try row.optional("delivered_at", as: Int64.self),
            lastAttemptAt: try row.optional("last_attempt_at", as: Int64.self),
            lastStatus: try row.optional("last_status", as: Int.self),
            lastError: try row.optional("last_error", as: String.self),
            lastAnswer: try row.optional("last_answer", as: String.self),
            lastUrl: try row.optional("last_url", as: String.self),
            lastDuration: try row.optional("last_duration", as: Int64.self),
            createdAt: try row.decode(column: "created_at", as: Int64.self),
            updatedAt: try row.decode(column: "updated_at", as: Int64.self),
            nextAttemptAt: row.contains(column: "next_attempt_at")
                ? try row.optional("next_attempt_at", as: Int64.self) : nil
        )
    }
}
