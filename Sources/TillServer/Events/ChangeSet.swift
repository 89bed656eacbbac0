import Foundation
import SQLKit
import Synchronization
import TillContract
import TillCore

/// A change under way: the database transaction it is made in, and the events it records. `EventLog.transaction`
/// makes one, hands it to the code that changes things (the ledger's functions take it), and writes its events at the
/// end of the same database transaction: an outbox, so that an event is there if and only if its change is.
final class ChangeSet: Sendable {
    /// The database transaction.
    let db: any SQLDatabase
    private let state: Mutex<State>

    private struct State {
        var source: EventSource
        var pending: [PendingEvent] = []
        /// Customers read after the last change of the transaction (`remember`), for the events to reuse.
        var known: [CustomerKey: CustomerSnapshot] = [:]
    }

    init(db: any SQLDatabase, source: EventSource) {
        self.db = db
        self.state = Mutex(State(source: source))
    }

    /// Who told the server of what is being changed now.
    var source: EventSource { state.withLock { $0.source } }

    /// Records an event, written when the transaction ends; its source is the change set's unless it has its own.
    func record(_ event: PendingEvent) {
        state.withLock { state in
            var event = event
            if event.source == nil { event.source = state.source }
            state.pending.append(event)
        }
    }

    /// Runs `body` with `source` as the source of what it records (a notification that waited for its purchase,
    /// applied inside the submission that recorded it).
    func with<Result>(source: EventSource, _ body: () async throws -> Result) async rethrows -> Result {
        let previous = state.withLock { state in
            defer { state.source = source }
            return state.source
        }
        defer { state.withLock { $0.source = previous } }
        return try await body()
    }

    /// The events recorded so far, handed over once (to be written).
    func takeEvents() -> [PendingEvent] {
        state.withLock { state in
            defer { state.pending = [] }
            return state.pending
        }
    }

    /// Keeps a customer as the transaction leaves them, read by the caller after its last change (intake reads the
    /// customer it answers with): the events about them use it rather than reading it again.
    func remember(_ snapshot: CustomerSnapshot, bundleId: String) {
        state.withLock { $0.known[CustomerKey(bundleId: bundleId, customerId: snapshot.owner)] = snapshot }
    }

    /// A customer `remember` kept, if any.
    func known(_ key: CustomerKey) -> CustomerSnapshot? { state.withLock { $0.known[key] } }
}

/// An event as the code that made the change records it: what happened, to whom, about what. `EventLog` gives it its
/// id, its place in the feed and the customer as the whole change left them.
struct PendingEvent: Sendable {
    var type: EventType
    var bundleId: String
    /// The customer (an account, after aliases); nil when no one owns what it is about.
    var customerId: String?
    var occurredAt: Int64
    var environment: AppStoreEnvironment?
    /// Nil: the change set's.
    var source: EventSource?
    var product: Components.Schemas.EventProduct?
    var transaction: Components.Schemas.EventTransaction?
    var price: Components.Schemas.Money?
    var balanceChanges: [String: Int64] = [:]
    var refund: Components.Schemas.EventRefund?
    var subscription: Components.Schemas.EventSubscription?
    var transfer: Components.Schemas.EventTransfer?
    var rejection: Components.Schemas.EventRejection?
    var consumption: Components.Schemas.EventConsumption?

    init(
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
    init(
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
    init(_ row: LedgerRecord) {
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
