import Foundation
import TillContract
import TillCore

/// Derives entitlements from a customer's ledger: a pure function of transactions, catalogue and time.
///
/// - Consumables grant credits, not entitlements.
/// - Non-consumables and free subscriptions grant their entitlements for good, until refunded or revoked. One
///   purchase can be several transactions (the App Store hands a non-consumable out again under a transaction id of
///   its own, naming the original, on a restore or another device): a refund of any of them ends them all.
/// - Auto-renewable subscriptions grant them until the period's end (upgraded periods grant nothing); the
///   latest period of a subscription in a billing grace period grants them until the grace period ends.
/// - Non-renewing subscriptions last the catalogue's `durationSeconds` from each purchase; purchases bought
///   while one is running extend it.
/// When several purchases grant one entitlement, the one lasting longest wins.
package enum EntitlementRules {
    package static func entitlements(
        _ ledger: [LedgerRecord],
        catalogue: [String: CatalogProduct],
        now: Int64,
        gracePeriods: [SubscriptionKey: Int64] = [:]
    ) -> [Entitlement] {
        var latestPeriod: [SubscriptionKey: LedgerRecord] = [:]
        for record in ledger where gracePeriods[SubscriptionKey(record)] != nil {
            if let current = latestPeriod[SubscriptionKey(record)], current.purchaseDate >= record.purchaseDate {
                continue
            }
            latestPeriod[SubscriptionKey(record)] = record
        }
        let refunded = Set(
            ledger.lazy.filter { $0.revocationReason == .refund }.map {
                PurchaseKey(environment: $0.environment, original: $0.originalTransactionId)
            }
        )
        var best: [String: Entitlement] = [:]
        var nonRenewingEnd: [String: Int64] = [:]
        for record in ledger.sorted(by: { $0.purchaseDate < $1.purchaseDate }) {
            guard record.revocationDate == nil, !record.isUpgraded, let product = catalogue[record.productId] else {
                continue
            }
            var expires: Int64?
            switch product.type {
            case .consumable:
                continue
            case .nonConsumable, .freeSubscription:
                if refunded.contains(
                    PurchaseKey(environment: record.environment, original: record.originalTransactionId)
                ) {
                    continue
                }
                expires = nil
            case .autoRenewable:
                guard let end = record.expiresDate else { continue }
                expires = end
                if let grace = gracePeriods[SubscriptionKey(record)], grace > end,
                    latestPeriod[SubscriptionKey(record)]?.transactionId == record.transactionId
                {
                    expires = grace
                }
            case .nonRenewing:
                guard let duration = product.durationSeconds else { continue }
                let start = max(record.purchaseDate, nonRenewingEnd[product.productId] ?? 0)
                let end = start + duration * 1000 * Int64(max(1, record.quantity))
                nonRenewingEnd[product.productId] = end
                expires = end
            }
            if let expires, expires <= now { continue }
            for id in product.entitlements {
                let candidate = Entitlement(
                    id: id,
                    productId: record.productId,
                    transactionId: record.transactionId,
                    environment: record.environment.rawValue,
                    expiresDate: expires,
                    provisional: !record.confirmed
                )
                if let current = best[id] {
                    let currentEnd = current.expiresDate ?? Int64.max
                    let candidateEnd = expires ?? Int64.max
                    if candidateEnd > currentEnd
                        || (candidateEnd == currentEnd && current.provisional && !candidate.provisional)
                    {
                        best[id] = candidate
                    }
                } else {
                    best[id] = candidate
                }
            }
        }
        return best.values.sorted { $0.id < $1.id }
    }
}

extension SubscriptionKey {
    package init(_ record: LedgerRecord) {
        self.init(environment: record.environment, originalTransactionId: record.originalTransactionId)
    }
}

/// A purchase, whatever transactions hand it out: its environment and its original transaction.
private struct PurchaseKey: Hashable {
    var environment: AppStoreEnvironment
    var original: String
}
