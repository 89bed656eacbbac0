import Foundation
import TillCatalogue
import TillContract
import TillCore
import TillLedger

/// Who may have an offer, decided from the ledger: a pure function of a customer's transactions, the catalogue and
/// time, in one subscription group (a product's `subscriptionGroup`, or the id of an auto-renewable product without
/// one).
enum OfferRules {
    /// What the ledger says of a customer in a subscription group.
    struct GroupHistory: Sendable, Equatable {
        /// A period of the group grants access now (a billing grace period counts).
        var subscribedNow = false
        /// The customer ever bought a subscription of the group.
        var everSubscribed = false
        /// The customer ever had an introductory offer (free trial or introductory price) in the group.
        var hadIntroductoryOffer = false
    }

    /// The subscription group a catalogue product belongs to; nil for products that are not auto-renewable.
    static func group(of product: CatalogProduct) -> String? {
        product.type == .autoRenewable ? product.subscriptionGroup ?? product.productId : nil
    }

    /// Every subscription group of a catalogue.
    static func groups(in catalogue: [String: CatalogProduct]) -> Set<String> {
        Set(catalogue.values.compactMap(group(of:)))
    }

    /// What a customer's ledger says of `group`. Purchases Apple rejected (revoked by the rejection of their
    /// submission) were never the customer's and do not count; refunded ones do (they happened). An operator's grant
    /// does not either: the offers are the App Store's, which knows only its own purchases (a customer subscribed by a
    /// grant alone is one Apple would refuse a promotional offer, and would give an introductory one).
    static func history(
        in group: String,
        ledger: [LedgerRecord],
        catalogue: [String: CatalogProduct],
        gracePeriods: [SubscriptionKey: Int64],
        now: Int64
    ) -> GroupHistory {
        var history = GroupHistory()
        let rows = ledger.filter { row in
            !row.isRevokedByRejection && row.source != .operator
                && catalogue[row.productId].flatMap(Self.group(of:)) == group
        }
        var latestPeriod: [SubscriptionKey: LedgerRecord] = [:]
        for row in rows where (latestPeriod[SubscriptionKey(row)]?.purchaseDate ?? Int64.min) < row.purchaseDate {
            latestPeriod[SubscriptionKey(row)] = row
        }
        for row in rows {
            history.everSubscribed = true
            history.hadIntroductoryOffer = history.hadIntroductoryOffer || row.introductoryOffer
            guard row.revocationDate == nil, !row.isUpgraded else { continue }
            var end = row.expiresDate ?? Int64.min
            if let grace = gracePeriods[SubscriptionKey(row)],
                latestPeriod[SubscriptionKey(row)]?.transactionId == row.transactionId
            {
                end = max(end, grace)
            }
            if end > now { history.subscribedNow = true }
        }
        return history
    }

    /// Whether an offer's rule admits a customer with this history.
    static func admits(_ eligibility: Components.Schemas.OfferEligibility, _ history: GroupHistory) -> Bool {
        switch eligibility {
        case .anyone: true
        case .newCustomers: !history.everSubscribed
        case .subscribers: history.subscribedNow
        case .lapsedSubscribers: history.everSubscribed && !history.subscribedNow
        case .currentOrLapsedSubscribers: history.everSubscribed
        }
    }

    /// What the rule asks, for a refusal's message.
    static func describe(_ eligibility: Components.Schemas.OfferEligibility, group: String) -> String {
        switch eligibility {
        case .anyone: "anyone"
        case .newCustomers: "customers who never subscribed in \(group)"
        case .subscribers: "customers subscribed in \(group) now"
        case .lapsedSubscribers: "customers who subscribed in \(group) before and are not subscribed now"
        case .currentOrLapsedSubscribers: "customers who ever subscribed in \(group)"
        }
    }

    /// Whether a customer may have the group's introductory offer, and why: not after one in the group (Apple's
    /// rule: once per customer and group), nor while subscribed in it (Apple: existing subscribers who change plan
    /// are never eligible); an operator's override wins.
    static func introductoryOffer(_ history: GroupHistory, override: Bool?) -> (allow: Bool, reason: String) {
        if let override { return (override, "operatorOverride") }
        if history.hadIntroductoryOffer { return (false, "hadIntroductoryOffer") }
        if history.subscribedNow { return (false, "subscribedNow") }
        return (true, "neverHadIntroductoryOffer")
    }
}
