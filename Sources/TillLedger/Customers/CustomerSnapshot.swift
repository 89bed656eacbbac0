import Foundation
import SQLKit
import TillContract
import TillCore
import TillStorage

/// What the database holds about a customer: who it really is (after aliases), its ledger, balances and the renewal
/// states of its subscriptions. Read the same way for the customer view (`Customers`) and for the customer an event
/// carries (`EventLog`).
package struct CustomerSnapshot: Sendable {
    package var owner: String
    /// When the server first recorded the customer (`CustomerStore.Account.firstSeen`): nil for an id it never
    /// recorded, and in an event's customer, which does not show it.
    package var firstSeen: Int64?
    package var ledger: [LedgerRecord]
    package var balances: [String: Int64]
    package var states: [SubscriptionStateRecord]

    /// How many of a customer's latest consumable purchases their view lists (the others are counted in the
    /// balances, and listed in full by the console and the events): a purchase costs the same whatever the
    /// customer's history.
    package static let recentConsumables = 10

    /// What the database holds about the customer `owner` (an id with no alias), read on `db`: the purchases that may
    /// grant access and the latest consumables (`PurchaseStore.holdings`), the balances, the renewal states;
    /// `firstSeen` is the caller's, read with the alias (`CustomerStore.account`).
    package static func read(
        bundleId: String,
        owner: String,
        firstSeen: Int64?,
        database: TillDatabase,
        on db: any SQLDatabase
    ) async throws -> CustomerSnapshot {
        let purchaseStore = PurchaseStore(database: database)
        let ledger = try await purchaseStore.holdings(bundleId: bundleId, customerId: owner, on: db)
        return CustomerSnapshot(
            owner: owner,
            firstSeen: firstSeen,
            ledger: ledger,
            balances: try await purchaseStore.balances(bundleId: bundleId, customerId: owner, on: db),
            states: try await subscriptionStates(of: ledger, bundleId: bundleId, database: database, on: db)
        )
    }

    /// The entitlements the customer has at `now` (`EntitlementRules`, a grace period extending its subscription).
    package func entitlements(catalogue: [String: CatalogProduct], now: Int64) -> [Entitlement] {
        EntitlementRules.entitlements(
            ledger,
            catalogue: catalogue,
            now: now,
            gracePeriods: Self.gracePeriods(states)
        )
    }

    /// The renewal states of the subscriptions in a customer's ledger.
    package static func subscriptionStates(
        of ledger: [LedgerRecord],
        bundleId: String,
        database: TillDatabase,
        on db: any SQLDatabase
    ) async throws -> [SubscriptionStateRecord] {
        let subscriptions = Set(
            // Receipts without a catalogue entry carry no type: any purchase with an end may be a subscription.
            ledger.filter { $0.productType == .autoRenewable || $0.expiresDate != nil }.map(SubscriptionKey.init)
        )
        guard !subscriptions.isEmpty else { return [] }
        return try await NotificationStore(database: database).subscriptionStates(
            bundleId: bundleId,
            originalTransactionIds: Array(Set(subscriptions.map(\.originalTransactionId))).sorted(),
            on: db
        ).filter {
            subscriptions.contains(
                SubscriptionKey(environment: $0.environment, originalTransactionId: $0.originalTransactionId)
            )
        }
    }
}
