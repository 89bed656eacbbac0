import Foundation
import SQLKit
import TillContract
import TillCore
import TillStorage

/// The event log's table (`EventLog`): events numbered in commit order, the feed, and what deliveries and replays read
/// (migration 019-events).
package struct EventStore: ServerSQLStore {
    package let database: TillDatabase

    /// Holds, until the end of `db`'s transaction, the right to number events: the transaction that holds it commits
    /// before another takes the next number, so numbers become visible in order. PostgreSQL: an advisory lock;
    /// SQLite's single writer holds it already.
    package func lockEventSequence(on db: any SQLDatabase) async throws {
        guard database.engine == .postgres else { return }
        try await db.raw("SELECT pg_advisory_xact_lock(\(literal: Self.eventSequenceLock))").run()
    }

    /// The advisory lock numbering events (any constant no other lock of the server uses; the purchase locks are
    /// hashes of their names).
    private static let eventSequenceLock: Int64 = 0x7469_6C6C_6576_7473  // "tillevts"

    /// The sequence of the last event written (0 before the first).
    package func lastEventSequence(on db: any SQLDatabase) async throws -> Int64 {
        try await db.raw("SELECT MAX(sequence) AS last FROM srv_events").first()?
            .decode(column: "last", as: Int64?.self) ?? 0
    }

    package func insert(_ event: EventRecord, on db: any SQLDatabase) async throws {
        try await db.run(
            RecordStatements.insert(into: "srv_events", columns: EventRecord.columns, rows: [event.values])
        )
    }

    /// The events after `sequence`, in order, at most `limit`: all of them, or of one app, of some of its customers,
    /// of one type.
    package func events(
        after sequence: Int64,
        limit: Int,
        bundleId: String?,
        customerIds: [String]?,
        type: EventType?,
        on db: any SQLDatabase
    ) async throws -> [EventRecord] {
        if let bundleId, let customerIds, customerIds.count > 1 {
            // A customer with guest ids: each id's events through the index of customers, at most `limit` each, then
            // the first `limit` of them all (one `IN` would have the planner read the whole app's events in order).
            let each = customerIds.enumerated().map { index, customerId -> SQLQueryString in
                """
                SELECT * FROM (SELECT * FROM srv_events WHERE bundle_id = \(bind: bundleId)
                  AND customer_id = \(bind: customerId) AND sequence > \(bind: sequence)\(Self.ofType(type))
                  ORDER BY sequence LIMIT \(literal: limit)) AS c\(unsafeRaw: String(index))
                """
            }
            return try await db.raw(
                """
                SELECT * FROM (\(SQLList(each, separator: SQLRaw(" UNION ALL ")))) AS e
                ORDER BY sequence LIMIT \(literal: limit)
                """
            ).all(decoding: EventRecord.self, with: Self.decoding)
        }
        var query = db.select().column("*").from("srv_events").where("sequence", .greaterThan, sequence)
        if let bundleId { query = query.where("bundle_id", .equal, bundleId) }
        if let customerId = customerIds?.first, customerIds?.count == 1 {
            query = query.where("customer_id", .equal, customerId)
        } else if let customerIds {
            query = query.where("customer_id", .in, customerIds)
        }
        if let type { query = query.where("type", .equal, type.rawValue) }
        return try await query.orderBy("sequence").limit(limit).all(decoding: EventRecord.self, with: Self.decoding)
    }

    /// What a dispatch reads of an event: where it is, its id and type, and its customer (not its body).
    package struct EventToDispatch: Sendable {
        package var sequence: Int64
        package var id: String
        package var type: EventType
        package var customerId: String?
        /// Written by an import of existing customers (source `import`), which webhooks may leave out.
        package var isImport: Bool

        package init(
            sequence: Int64,
            id: String,
            type: EventType,
            customerId: String? = nil,
            isImport: Bool = false
        ) {
            self.sequence = sequence
            self.id = id
            self.type = type
            self.customerId = customerId
            self.isImport = isImport
        }
    }

    /// An app's events after `sequence`, in order, at most `limit`, as a dispatch reads them: four columns, read by
    /// hand (whole rows with their bodies, through Codable, cost more CPU time than the dispatch's inserts).
    package func eventsToDispatch(after sequence: Int64, limit: Int, bundleId: String, on db: any SQLDatabase)
        async throws
        -> [EventToDispatch]
    {
        try await db.raw(
            """
            SELECT sequence, id, type, customer_id, source FROM srv_events
            WHERE bundle_id = \(bind: bundleId) AND sequence > \(bind: sequence) ORDER BY sequence LIMIT \(literal: limit)
            """
        ).all().map { row in
            EventToDispatch(
                sequence: try row.decode(column: "sequence", as: Int64.self),
                id: try row.decode(column: "id", as: String.self),
                type: try row.enumeration("type", as: EventType.self),
                customerId: try row.optional("customer_id", as: String.self),
                isImport: try row.decode(column: "source", as: String.self) == "import"
            )
        }
    }

    /// An event as it is sent at dispatch: what a dispatch reads of it, its body and when it happened.
    package struct EventToSend: Sendable {
        package var event: EventToDispatch
        package var body: String
        package var occurredAt: Int64
        /// The trace of the change that wrote it (docs/tracing.md).
        package var trace: String?
    }

    /// An app's events after `sequence`, in order, at most `limit`, with their bodies (`WebhookDeliveries.sendAtDispatch`).
    package func eventsToSend(after sequence: Int64, limit: Int, bundleId: String, on db: any SQLDatabase) async throws
        -> [EventToSend]
    {
        try await db.raw(
            """
            SELECT sequence, id, type, customer_id, source, body, occurred_at, trace FROM srv_events
            WHERE bundle_id = \(bind: bundleId) AND sequence > \(bind: sequence) ORDER BY sequence LIMIT \(literal: limit)
            """
        ).all().map { row in
            EventToSend(
                event: EventToDispatch(
                    sequence: try row.decode(column: "sequence", as: Int64.self),
                    id: try row.decode(column: "id", as: String.self),
                    type: try row.enumeration("type", as: EventType.self),
                    customerId: try row.optional("customer_id", as: String.self),
                    isImport: try row.decode(column: "source", as: String.self) == "import"
                ),
                body: try row.decode(column: "body", as: String.self),
                occurredAt: try row.decode(column: "occurred_at", as: Int64.self),
                trace: try row.optional("trace", as: String.self)
            )
        }
    }

    private static func ofType(_ type: EventType?) -> SQLQueryString {
        type.map { " AND type = \(bind: $0.rawValue)" } ?? ""
    }

    /// One event of an app, by its id.
    package func event(bundleId: String, id: String, on db: any SQLDatabase) async throws -> EventRecord? {
        try await db.raw(
            "SELECT * FROM srv_events WHERE id = \(bind: id) AND bundle_id = \(bind: bundleId)"
        ).first(decoding: EventRecord.self, with: Self.decoding)
    }

    /// The sequence of the app's first event recorded at or after `time` (UNIX ms); nil when none is.
    package func firstEventSequence(bundleId: String, recordedSince time: Int64, on db: any SQLDatabase) async throws
        -> Int64?
    {
        try await db.raw(
            """
            SELECT MIN(sequence) AS first FROM srv_events
            WHERE bundle_id = \(bind: bundleId) AND created_at >= \(bind: time)
            """
        ).first()?.decode(column: "first", as: Int64?.self)
    }

    package init(
        database: TillDatabase
    ) {
        self.database = database
    }
}
