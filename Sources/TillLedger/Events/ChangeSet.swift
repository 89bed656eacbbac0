import Foundation
import SQLKit
import Synchronization
import TillContract
import TillCore

/// A change under way: the database transaction it is made in, and the events it records. `EventLog.transaction`
/// makes one, hands it to the code that changes things (the ledger's functions take it), and writes its events at the
/// end of the same database transaction: an outbox, so that an event is there if and only if its change is.
package final class ChangeSet: Sendable {
    /// The database transaction.
    package let db: any SQLDatabase
    private let state: Mutex<State>

    private struct State {
        var source: EventSource
        var pending: [PendingEvent] = []
        /// Customers read after the last change of the transaction (`remember`), for the events to reuse.
        var known: [CustomerKey: KnownCustomer] = [:]
        /// What the change did to the figures (`LedgerStore` notes it), written with the events.
        var figures: [FigureChange] = []
    }

    /// The W3C traceparent of the change's span (docs/tracing.md), read in the caller's task before the transaction:
    /// its events and the jobs it queues keep it, so that their work continues the change's trace. Nil with tracing
    /// off.
    package let trace: String?

    package init(db: any SQLDatabase, source: EventSource, trace: String? = nil) {
        self.db = db
        self.state = Mutex(State(source: source))
        self.trace = trace
    }

    /// Who told the server of what is being changed now.
    package var source: EventSource { state.withLock { $0.source } }

    /// Records an event, written when the transaction ends; its source is the change set's unless it has its own.
    package func record(_ event: PendingEvent) {
        state.withLock { state in
            var event = event
            if event.source == nil { event.source = state.source }
            state.pending.append(event)
        }
    }

    /// Runs `body` with `source` as the source of what it records (a notification that waited for its purchase,
    /// applied inside the submission that recorded it).
    package func with<Result>(source: EventSource, _ body: () async throws -> Result) async rethrows -> Result {
        let previous = state.withLock { state in
            defer { state.source = source }
            return state.source
        }
        defer { state.withLock { $0.source = previous } }
        return try await body()
    }

    /// The events recorded so far, handed over once (to be written).
    package func takeEvents() -> [PendingEvent] {
        state.withLock { state in
            defer { state.pending = [] }
            return state.pending
        }
    }

    /// Notes what a write of the ledger did to the figures (`srv_figure_changes`), written at the end of the transaction.
    package func journal(_ changes: [FigureChange]) {
        guard !changes.isEmpty else { return }
        state.withLock { $0.figures.append(contentsOf: changes) }
    }

    /// The figures' journal lines noted so far, handed over once (to be written).
    package func takeFigureChanges() -> [FigureChange] {
        state.withLock { state in
            defer { state.figures = [] }
            return state.figures
        }
    }

    /// Keeps a customer as the transaction leaves them, read by the caller after its last change (intake reads the
    /// customer it answers with): the events about them use it rather than reading it again.
    /// `guests`, when the caller knows them (`[]` for a customer this transaction recorded for the first time), spare
    /// the events a read of them.
    package func remember(_ snapshot: CustomerSnapshot, bundleId: String, guests: [String]? = nil) {
        let key = CustomerKey(bundleId: bundleId, customerId: snapshot.owner)
        state.withLock { $0.known[key] = KnownCustomer(snapshot: snapshot, guests: guests) }
    }

    /// A customer `remember` kept, if any.
    package func known(_ key: CustomerKey) -> KnownCustomer? { state.withLock { $0.known[key] } }
}

/// A customer as the caller of a change last read them (`ChangeSet.remember`).
package struct KnownCustomer: Sendable {
    package var snapshot: CustomerSnapshot
    /// The guest ids linked to them, when the caller knows them; nil: the events read them.
    package var guests: [String]?
}

/// An event as the code that made the change records it: what happened, to whom, about what. `EventLog` gives it its
/// id, its place in the feed and the customer as the whole change left them.
package struct PendingEvent: Sendable {
    package var type: EventType
    package var bundleId: String
    /// The customer (an account, after aliases); nil when no one owns what it is about.
    package var customerId: String?
    package var occurredAt: Int64
    package var environment: AppStoreEnvironment?
    /// Nil: the change set's.
    package var source: EventSource?
    package var product: Components.Schemas.EventProduct?
    package var transaction: Components.Schemas.EventTransaction?
    package var price: Components.Schemas.Money?
    package var balanceChanges: [String: Int64] = [:]
    package var refund: Components.Schemas.EventRefund?
    package var subscription: Components.Schemas.EventSubscription?
    package var transfer: Components.Schemas.EventTransfer?
    package var rejection: Components.Schemas.EventRejection?
    package var consumption: Components.Schemas.EventConsumption?

    package init(
        _ type: EventType,
        bundleId: String,
        customerId: String?,
        occurredAt: Int64,
        environment: AppStoreEnvironment? = nil
    ) {
        self.type = type
        self.bundleId = bundleId
        self.customerId = customerId
        self.occurredAt = occurredAt
        self.environment = environment
    }

    /// An event about a ledger row (after the change): its customer, environment, product and transaction.
    package init(
        _ type: EventType,
        about row: LedgerRecord,
        product: CatalogProduct?,
        occurredAt: Int64,
        balanceChanges: [String: Int64] = [:]
    ) {
        self.init(type, bundleId: row.bundleId, customerId: row.customerId, occurredAt: occurredAt)
        environment = row.environment
        self.product = Components.Schemas.EventProduct(
            id: row.productId,
            _type: (product?.type ?? row.productType).map(Components.Schemas.ProductType.init),
            entitlements: product?.entitlements ?? []
        )
        transaction = Components.Schemas.EventTransaction(row)
        self.balanceChanges = balanceChanges
    }
}

extension Components.Schemas.EventTransaction {
    package init(_ row: LedgerRecord) {
        self.init(
            transactionId: row.transactionId,
            originalTransactionId: row.originalTransactionId,
            webOrderLineItemId: row.webOrderLineItemId,
            purchaseDate: row.purchaseDate,
            expiresDate: row.expiresDate,
            quantity: row.quantity,
            ownership: Components.Schemas.Ownership(rawValue: row.ownership.rawValue) ?? .purchased,
            storefront: row.storefront,
            confirmed: row.confirmed,
            revocationDate: row.revocationDate,
            revocationReason: row.revocationReason
        )
    }
}
