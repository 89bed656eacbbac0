import Foundation
import Logging
import SQLKit
import Synchronization
import TillContract
import TillCore
import TillHTTPKit
import TillStorage
import Tracing

/// The event log: every change the ledger makes (and every answer sent to Apple's consumption requests) as a typed
/// event, written in the database transaction of the change itself (an outbox), numbered in the order the changes
/// commit, read back as the feed (`GET /admin/v1/events`) and by the webhook deliveries (docs/events.md).
///
/// A change is made in `transaction(source:_:)`: the body changes what it must through a `ChangeSet`, which collects
/// the events; at its end the events get their customer as the whole change left them (entitlements, balances,
/// guest ids), an id and a sequence number, and are inserted before the commit.
///
/// Numbering: an event's `sequence` is the last one's plus one, taken at the very end of its transaction under a
/// lock held until the commit (PostgreSQL: an advisory lock; SQLite has a single writer), so sequences commit in
/// order and a reader that saw sequence n never sees a smaller one appear later: the feed can be read with a cursor,
/// and the deliveries of one customer go out in the order their changes were made.
public struct EventLog: Sendable {
    package let database: TillDatabase
    /// The customers and their aliases.
    package var customerStore: CustomerStore { CustomerStore(database: database) }
    /// The apps' products, for the entitlements an event's customer has.
    package let catalogue: any ProductCatalogue
    package let clock: ServerClock
    /// Signalled after a commit that wrote events (the webhook dispatcher waits on it).
    package let appended: Wakeup
    /// The events' own table.
    package var eventStore: EventStore { EventStore(database: database) }
    /// The figures' journal, written in the change's transaction.
    package var figureStore: FigureStore { FigureStore(database: database) }
    /// The last sequence this process committed (the dispatcher's cue, besides reading the table now and then for
    /// other processes' events).
    package let committed = SequenceMark()
    /// SQLite: the last sequence given to an event (`lastSequence(reserving:on:)`).
    package let numbering = EventNumbering()

    package init(database: TillDatabase, catalogue: any ProductCatalogue, clock: ServerClock, appended: Wakeup) {
        self.database = database
        self.catalogue = catalogue
        self.clock = clock
        self.appended = appended
    }

    /// Runs `body` in one database transaction whose events are written at its end; `source` is who told the server
    /// of the change (a body may change it for part of its work: `ChangeSet.with(source:_:)`).
    package func transaction<Result: Sendable>(
        source: EventSource,
        _ body: @escaping @Sendable (ChangeSet) async throws -> Result
    ) async throws -> Result {
        let (result, last) = try await Traces.withSpan("ledger.transaction", continuing: nil) { span in
            if span.isRecording { span.attributes["till.source"] = source.kind.rawValue }
            // Read here, in the caller's task: on SQLite the body may run on a group commit's leader (`Traces.current`).
            let trace = Traces.current
            return try await database.transaction { db -> (Result, Int64?) in
                let changes = ChangeSet(db: db, source: source, trace: trace)
                let result = try await body(changes)
                try await self.figureStore.insert(figureChanges: changes.takeFigureChanges(), on: db)
                return (
                    result,
                    try await self.write(changes.takeEvents(), known: changes.known, trace: changes.trace, on: db)
                )
            }
        }
        if let last {
            committed.raise(to: last)
            if committed.isWatched { appended.signal() }
        }
        return result
    }

    /// Writes the events of a change at the end of its transaction; answers the last one's sequence (nil: none).
    private func write(
        _ pending: [PendingEvent],
        known: (CustomerKey) -> KnownCustomer?,
        trace: String?,
        on db: any SQLDatabase
    ) async throws -> Int64? {
        guard !pending.isEmpty else { return nil }
        let now = clock.milliseconds
        // Each customer as the whole change left them, read once (or as the caller read them last).
        var customers: [CustomerKey: Components.Schemas.EventCustomer] = [:]
        for event in pending {
            guard let customerId = event.customerId else { continue }
            let key = CustomerKey(bundleId: event.bundleId, customerId: customerId)
            if customers[key] == nil { customers[key] = try await customer(key, known: known(key), now: now, on: db) }
        }
        var sequence = try await lastSequence(reserving: pending.count, on: db)
        for event in pending {
            sequence += 1
            var record = try EventRecord(
                event,
                sequence: sequence,
                id: Self.newId(),
                createdAt: now,
                customer: event.customerId.flatMap {
                    customers[CustomerKey(bundleId: event.bundleId, customerId: $0)]
                }
            )
            // The change's trace, which the event's webhook attempts continue (nil with tracing off).
            record.trace = trace
            try await eventStore.insert(record, on: db)
        }
        return sequence
    }

    /// The sequence the change's events follow, the right to number them taken (PostgreSQL: the advisory lock until the
    /// commit). On SQLite the number is kept here after a first read of the table: one process owns the file and its
    /// single writer runs the changes one after another, so reading `MAX(sequence)` in every change (a statement
    /// inside the writer's critical section) tells nothing new. A change rolled back leaves its numbers unused: the
    /// sequence may skip, never go back.
    private func lastSequence(reserving count: Int, on db: any SQLDatabase) async throws -> Int64 {
        guard database.engine == .sqlite else {
            try await eventStore.lockEventSequence(on: db)
            return try await eventStore.lastEventSequence(on: db)
        }
        if let last = numbering.reserve(count) { return last }
        let inTable = try await eventStore.lastEventSequence(on: db)
        return numbering.start(after: inTable, reserving: count)
    }

    /// The customer as an event shows it: their entitlements and balances now, and the guest ids linked to them.
    private func customer(_ key: CustomerKey, known: KnownCustomer?, now: Int64, on db: any SQLDatabase)
        async throws -> Components.Schemas.EventCustomer
    {
        let snapshot: CustomerSnapshot
        if let known {
            snapshot = known.snapshot
        } else {
            snapshot = try await CustomerSnapshot.read(
                bundleId: key.bundleId,
                owner: key.customerId,
                firstSeen: nil,
                database: database,
                on: db
            )
        }
        let aliases: [String]
        if let guests = known?.guests {
            aliases = guests
        } else {
            aliases = try await customerStore.guests(bundleId: key.bundleId, customerId: key.customerId, on: db)
        }
        return Components.Schemas.EventCustomer(
            id: key.customerId,
            aliases: aliases,
            entitlements: snapshot.entitlements(
                catalogue: try await catalogue.products(of: key.bundleId, on: db),
                now: now
            ),
            balances: Components.Schemas.Credits(snapshot.balances)
        )
    }

    /// `evt_` and 32 random hex digits (written from the random bytes: Foundation's `replacingOccurrences` on a UUID's
    /// text cost 1.4% of a purchase's CPU, perf).
    package static func newId() -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef".utf8)
        var id = Array("evt_".utf8)
        id.reserveCapacity(36)
        for _ in 0..<2 {
            let random = generator.next() as UInt64
            for shift in stride(from: 60, through: 0, by: -4) { id.append(digits[Int(random >> UInt64(shift) & 0xF)]) }
        }
        return String(decoding: id, as: UTF8.self)
    }

    // MARK: The feed

    /// A page of the feed as JSON (the contract's `EventPage`), the events' stored bytes as they are: after the
    /// cursor `after` (a previous page's `nextCursor`), at most `limit`, of one app, one customer (with the guest
    /// ids linked to them) or one type.
    public func feed(
        after: String?,
        limit: Int = PageRequest.defaultLimit,
        bundleId: String? = nil,
        customerId: String? = nil,
        type: EventType? = nil
    ) async throws -> [UInt8] {
        let start = try Self.sequence(ofCursor: after)
        var customers: [String]?
        if let customerId {
            guard let bundleId else {
                throw EventRefusal(.bundleIdRequired, "customerId needs the bundleId of its app")
            }
            let owner = try await customerStore.resolve(bundleId: bundleId, customerId: customerId, on: database.sql)
            customers =
                [owner] + (try await customerStore.guests(bundleId: bundleId, customerId: owner, on: database.sql))
        }
        let records = try await eventStore.events(
            after: start,
            limit: limit + 1,
            bundleId: bundleId,
            customerIds: customers,
            type: type,
            on: database.sql
        )
        // A cursor past the last event was never a nextCursor: a reader holding one (mistyped, or kept across a
        // restore of an older backup, until new events reach it) would skip every event numbered up to it as they
        // come. Checked when the page is empty, the only page such a cursor gives.
        if records.isEmpty, start > 0 {
            let last = try await eventStore.lastEventSequence(on: database.sql)
            guard start <= last else {
                throw EventRefusal(
                    .invalidCursor,
                    "after (\(start)) is past the feed's last event (\(last)): pass a nextCursor the feed gave"
                )
            }
        }
        let shown = records.prefix(limit)
        var writer = JSONWriter(capacity: 256 + shown.reduce(0) { $0 + $1.body.utf8.count + 1 })
        writer.object { w in
            w.field("hasMore", records.count > limit)
            w.key("items")
            w.array(Array(shown)) { w, record in w.verbatim(record.body) }
            w.field("nextCursor", String(shown.last?.sequence ?? start))
        }
        return writer.bytes
    }

    /// The sequence a feed cursor names (0 for none): its decimal digits.
    package static func sequence(ofCursor cursor: String?) throws -> Int64 {
        guard let cursor, !cursor.isEmpty else { return 0 }
        guard cursor.utf8.count <= 19, cursor.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let sequence = Int64(cursor)
        else {
            throw EventRefusal(.invalidCursor, "after is a nextCursor of the feed")
        }
        return sequence
    }
}

/// An event as `srv_events` keeps it: the columns the feed and the deliveries select on, and the event's JSON, written
/// once.
package struct EventRecord: Codable, Sendable {
    package var sequence: Int64
    package var id: String
    package var bundleId: String
    package var customerId: String?
    package var type: EventType
    package var source: Components.Schemas.EventSourceKind
    package var environment: AppStoreEnvironment?
    package var occurredAt: Int64
    package var createdAt: Int64
    /// The contract's `Event`, as JSON.
    package var body: String
    /// The W3C traceparent of the change that wrote it, when tracing is on: its webhook attempts continue that trace.
    package var trace: String?

    package init(
        _ event: PendingEvent,
        sequence: Int64,
        id: String,
        createdAt: Int64,
        customer: Components.Schemas.EventCustomer?
    ) throws {
        let source = event.source ?? EventSource(kind: .app)
        let wire = Event(
            id: id,
            _type: event.type,
            sequence: sequence,
            createdAt: createdAt,
            occurredAt: event.occurredAt,
            bundleId: event.bundleId,
            environment: event.environment.flatMap { Components.Schemas.Environment(rawValue: $0.rawValue) },
            source: source,
            customer: customer,
            product: event.product,
            transaction: event.transaction,
            price: event.price,
            balanceChanges: event.balanceChanges.isEmpty ? nil : Components.Schemas.Credits(event.balanceChanges),
            refund: event.refund,
            subscription: event.subscription,
            transfer: event.transfer,
            rejection: event.rejection,
            consumption: event.consumption
        )
        self.sequence = sequence
        self.id = id
        self.bundleId = event.bundleId
        self.customerId = event.customerId
        self.type = event.type
        self.source = source.kind
        self.environment = event.environment
        self.occurredAt = event.occurredAt
        self.createdAt = createdAt
        self.body = String(decoding: wire.json(), as: UTF8.self)
    }
}

/// The last event sequence given out, on SQLite: nil until read from the table once.
package final class EventNumbering: Sendable {
    private let last = Mutex<Int64?>(nil)

    /// The last number given, and `count` more taken after it; nil before the first read of the table.
    package func reserve(_ count: Int) -> Int64? {
        last.withLock { last in
            guard let current = last else { return nil }
            last = current + Int64(count)
            return current
        }
    }

    /// The first reservation, after the table's last number (or this one's, if another change took one meanwhile).
    package func start(after inTable: Int64, reserving count: Int) -> Int64 {
        last.withLock { last in
            let current = max(last ?? inTable, inTable)
            last = current + Int64(count)
            return current
        }
    }
}

/// A sequence number that only moves forward, shared between tasks; and whether someone waits for it to move.
package final class SequenceMark: Sendable {
    private let value = Atomic<Int64>(0)
    private let watched = Atomic<Bool>(true)

    package var current: Int64 { value.load(ordering: .sequentiallyConsistent) }

    /// Whether a commit should wake the webhook worker: not while no endpoint is enabled, when waking it for every
    /// event would cost each purchase a wake-up for nothing. (The worker sets this before it reads `current`, and a
    /// commit raises the mark before it reads this: an event is either seen by that read or wakes the worker.)
    package var isWatched: Bool { watched.load(ordering: .sequentiallyConsistent) }

    package func watch(_ on: Bool) { watched.store(on, ordering: .sequentiallyConsistent) }

    package func raise(to sequence: Int64) {
        var seen = value.load(ordering: .relaxed)
        while seen < sequence {
            let (exchanged, now) = value.compareExchange(
                expected: seen,
                desired: sequence,
                ordering: .sequentiallyConsistent
            )
            if exchanged { return }
            seen = now
        }
    }
}
