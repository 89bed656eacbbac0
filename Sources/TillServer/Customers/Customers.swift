import Foundation
import NIOCore
import SQLKit
import TillAppStore
import TillCatalogue
import TillContent
import TillContract
import TillCore
import TillHTTPKit
import TillLedger
import TillStorage

/// Customers: who a customer id really is (guests linked to accounts), and what they have now — entitlements,
/// balances, purchases, subscriptions — read from the ledger and the catalogue, and cached as values and as the
/// bytes `GET /v1/customers/{id}` answers.
public struct Customers: Sendable {
    let database: TillDatabase
    /// The customers and their aliases.
    var customerStore: CustomerStore { CustomerStore(database: database) }
    /// What the ledger holds, read.
    var purchaseStore: PurchaseStore { PurchaseStore(database: database) }
    let catalogue: Catalogue
    let ledger: Ledger
    let clock: ServerClock
    private let customerSnapshots = SnapshotCache<CustomerKey, CustomerSnapshot>(lifetime: .seconds(1))
    /// Customer views as JSON, until the data under them changes or one of their entitlements ends.
    private let customerBodies = SnapshotCache<CustomerKey, EncodedCustomer>(lifetime: .seconds(1))
    /// The customers' timelines: activity, and the reads that find a customer.
    var timelineStore: TimelineStore { TimelineStore(database: database) }

    /// A customer's entitlements, balances and purchases now.
    ///
    /// What the database holds is cached until this process writes anything (or for a second, for changes
    /// made by other processes); entitlements are worked out from it at each read, so expiry is exact.
    public func customer(bundleId: String, customerId: String) async throws -> CustomerView {
        let snapshot = try await customerSnapshots.value(
            for: CustomerKey(bundleId: bundleId, customerId: customerId),
            generation: database.writeGeneration
        ) {
            try await self.database.read { db in
                try await self.snapshot(bundleId: bundleId, customerId: customerId, on: db)
            }
        }
        return try await view(of: snapshot, bundleId: bundleId)
    }

    /// The customer view of what the database held, with entitlements worked out now.
    package func view(of snapshot: CustomerSnapshot, bundleId: String) async throws -> CustomerView {
        let ledger = snapshot.ledger
        let states = snapshot.states
        let catalogue = try await self.catalogue.products(of: bundleId)
        return CustomerView(
            customerId: snapshot.owner,
            firstSeen: snapshot.firstSeen,
            entitlements: snapshot.entitlements(catalogue: catalogue, now: clock.milliseconds),
            balances: Components.Schemas.Credits(snapshot.balances),
            purchases: ledger.map {
                PurchaseView(
                    transactionId: $0.transactionId,
                    originalTransactionId: $0.originalTransactionId,
                    productId: $0.productId,
                    productType: $0.productType.map(Components.Schemas.ProductType.init),
                    environment: $0.environment.rawValue,
                    quantity: $0.quantity,
                    purchaseDate: $0.purchaseDate,
                    expiresDate: $0.expiresDate,
                    revocationDate: $0.revocationDate,
                    revocationReason: $0.revocationReason,
                    revocationDetail: $0.revocationDetail,
                    confirmed: $0.confirmed,
                    billingPlanType: $0.billingPlanType,
                    commitment: $0.commitmentPeriod == nil && $0.commitmentExpiresDate == nil
                        ? nil
                        : Components.Schemas.PurchaseCommitment(
                            billingPeriodNumber: $0.commitmentPeriod,
                            totalBillingPeriods: $0.commitmentPeriods,
                            expiresDate: $0.commitmentExpiresDate
                        )
                )
            },
            subscriptions: CustomerSnapshot.subscriptionViews(states, ledger: ledger)
        )
    }

    /// `customer(bundleId:customerId:)` as `GET /v1/customers/{id}` answers it (written as the submission's
    /// answer writes its customer: `CustomerView.writeJSON`).
    ///
    /// Encoding is most of what a read costs once the data is cached, so the bytes are kept too: until this
    /// process writes (the database's generation), the catalogue changes, a second passes (other processes),
    /// or the first of the customer's entitlements ends, after which the view is worked out again.
    func customerBody(bundleId: String, customerId: String) async throws -> ByteBuffer {
        try await customerBodies.value(
            for: CustomerKey(bundleId: bundleId, customerId: customerId),
            // Entitlements come from the catalogue too: its changes retire the bytes as the database's do (both
            // counters only grow, so their sum moves whenever either does).
            generation: database.writeGeneration &+ catalogue.revision,
            isStale: { encoded in encoded.validUntil.map { $0 <= self.clock.milliseconds } ?? false }
        ) {
            let now = clock.milliseconds
            let view = try await customer(bundleId: bundleId, customerId: customerId)
            let ends = view.entitlements.compactMap(\.expiresDate).filter { $0 > now }
            var writer = JSONWriter()
            view.writeJSON(to: &writer)
            return EncodedCustomer(body: ByteBuffer(bytes: writer.bytes), validUntil: ends.min())
        }.body
    }

    /// What the database holds about a customer (a guest id resolves to its account), read on one connection.
    func snapshot(bundleId: String, customerId: String, on db: any SQLDatabase) async throws
        -> CustomerSnapshot
    {
        let account = try await customerStore.account(bundleId: bundleId, customerId: customerId, on: db)
        return try await snapshot(bundleId: bundleId, owner: account.owner, firstSeen: account.firstSeen, on: db)
    }

    /// The ledger rows of a customer's account (a guest id resolves to it), oldest first: the console's purchases.
    func ledgerRows(bundleId: String, customerId: String) async throws -> [LedgerRecord] {
        try await database.read { db in
            try await self.purchaseStore.transactions(
                bundleId: bundleId,
                customerId: try await self.customerStore.resolve(bundleId: bundleId, customerId: customerId, on: db),
                on: db
            )
        }
    }

    /// What the database holds about the customer `owner` (an id with no alias), read on `db`.
    package func snapshot(bundleId: String, owner: String, firstSeen: Int64?, on db: any SQLDatabase) async throws
        -> CustomerSnapshot
    {
        try await CustomerSnapshot.read(
            bundleId: bundleId,
            owner: owner,
            firstSeen: firstSeen,
            database: database,
            on: db
        )
    }

    /// Links a guest (an anonymous device id that bought before signing in) to an account: the guest's own
    /// purchases and balances move to the account, once, and later submissions under the guest id count for the
    /// account.
    ///
    /// A guest id belongs to one account. Linking it to another is refused (`409 guestLinkedElsewhere`): on a
    /// shared device a second sign-in must not take the first account's purchases. Accounts are never merged: an
    /// id that other guests are linked to is an account and cannot become a guest (`409 guestIsAnAccount`), and
    /// a guest id cannot be linked to as if it were an account (`409 accountIsAGuest`).
    public func link(bundleId: String, guestId: String, to accountId: String) async throws -> CustomerView {
        let guestId = try CustomerIdentifier.validated(guestId, field: "customerId (the guest id)")
        let accountId = try CustomerIdentifier.validated(accountId, field: "the account id")
        guard guestId != accountId else {
            throw CustomerRefusal(.invalidAlias, "a guest id cannot be linked to itself")
        }
        // Linked already (an app that links at every sign-in): nothing changes, and nothing is held, so the
        // account's purchases do not wait for it. A link is for good: what this read finds stays true.
        if try await customerStore.aliasOf(bundleId: bundleId, customerId: guestId, on: database.sql) == accountId {
            return try await customer(bundleId: bundleId, customerId: accountId)
        }
        let now = clock.milliseconds
        try await ledger.transaction(source: .app()) { changes in
            let db = changes.db
            // Both ids held before anything is read: links sharing an id, and changes under the guest, wait.
            try await self.customerStore.record([accountId, guestId], bundleId: bundleId, at: now, holding: db)
            if let owner = try await self.customerStore.aliasOf(bundleId: bundleId, customerId: accountId, on: db) {
                throw CustomerRefusal(
                    .accountIsAGuest,
                    "\(accountId) is a guest id linked to \(owner): link guests to \(owner)"
                )
            }
            if let owner = try await self.customerStore.aliasOf(bundleId: bundleId, customerId: guestId, on: db) {
                guard owner == accountId else {
                    throw CustomerRefusal(
                        .guestLinkedElsewhere,
                        "\(guestId) is already linked to another account; a guest id belongs to one account"
                    )
                }
                return  // linked already: nothing changes
            }
            guard try await !self.customerStore.hasGuests(bundleId: bundleId, customerId: guestId, on: db) else {
                throw CustomerRefusal(
                    .guestIsAnAccount,
                    "\(guestId) has guests linked to it: accounts are never merged"
                )
            }
            try await self.ledger.link(bundleId: bundleId, guest: guestId, to: accountId, in: changes)
        }
        return try await customer(bundleId: bundleId, customerId: accountId)
    }
}

/// A customer view encoded for the app API, and the time (UNIX ms) it stops being true, if any.
struct EncodedCustomer: Sendable {
    /// A buffer, not an array: each answer shares it rather than copying the bytes into a buffer of its own.
    var body: ByteBuffer
    var validUntil: Int64?
}

extension Customers: AppStoreCustomers {}

extension Customers: ContentCustomers {
    /// Notes what content delivery did for a customer in its timeline.
    package func note(_ activity: CustomerActivity) async throws {
        try await timelineStore.insert(activity, on: database.sql)
    }
}
