import Foundation
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillLedger

/// What the server tells Apple about a purchase whose customer asked for a refund (Send Consumption Information
/// v2), from what it knows: a pure function of the ledger, the catalogue, the customer's balances and consent, and
/// the app's settings.
///
/// - Nothing is sent for a purchase no customer owns (there is no one whose consent could have been given), for a
///   customer who has not consented (Apple: "If not, don't respond"), or for a family-shared purchase (Apple refuses
///   them, 4000185).
/// - `deliveryStatus` is `DELIVERED` when the ledger granted the purchase: the catalogue knows its product and no
///   rejection by Apple took it back; otherwise `UNDELIVERED_OTHER`.
/// - `consumptionPercentage` is sent for a delivered consumable only: the share of the credits it granted that the
///   customer spent. The balance left counts as unspent credits of this purchase first, so the share never
///   overstates what was used. Never for an auto-renewable subscription (Apple computes it, and refuses one with
///   4000209), nor for products whose use the server cannot measure.
/// - `sampleContentProvided` and `refundPreference` are the app's settings.
enum ConsumptionRules {
    /// What to do with a consumption request.
    enum Decision: Sendable, Equatable {
        case send(ConsumptionRequest)
        /// Nothing is sent, and why.
        case skip(String)
    }

    /// What the server knows about the purchase.
    struct Facts: Sendable {
        /// The purchase's ledger row, when the ledger has it.
        var row: LedgerRecord?
        /// The catalogue's product, when it knows it.
        var product: CatalogProduct?
        /// The customer's balances (an account, aliases resolved).
        var balances: [String: Int64]
        /// Whether the customer consented to share consumption data with Apple.
        var consented: Bool
        var settings: ConsumptionSettings
    }

    static func decide(_ facts: Facts) -> Decision {
        guard let row = facts.row else {
            return .skip("no customer owns this purchase in the ledger, so no one could have consented")
        }
        guard facts.consented else {
            return .skip(
                "\(row.customerId) has not consented to share consumption data with Apple (PUT /v1/customers/{customer}/consumption-consent)"
            )
        }
        guard row.ownership != .familyShared else {
            return .skip("Apple takes no consumption information about family-shared purchases")
        }
        let delivered = facts.product != nil && !row.isRevokedByRejection
        let type = facts.product?.type ?? row.productType
        var percentage: Int?
        if delivered, type == .consumable, let product = facts.product {
            percentage = consumedShare(of: row, credits: product.credits, balances: facts.balances)
        }
        return .send(
            ConsumptionRequest(
                customerConsented: true,
                sampleContentProvided: facts.settings.sampleContentProvided ?? false,
                deliveryStatus: delivered ? .delivered : .undeliveredOther,
                consumptionPercentage: percentage,
                refundPreference: facts.settings.refundPreference.map { RefundPreference(rawValue: $0.rawValue) }
            )
        )
    }

    /// The share (milliunits, 0–100000) of the credits a consumable purchase granted that the customer spent: for
    /// each credit, what is left of the balance counts first as this purchase's, up to what it granted. Nil when
    /// the product grants no credits.
    static func consumedShare(of row: LedgerRecord, credits: [String: Int64], balances: [String: Int64]) -> Int? {
        let quantity = Int64(max(1, row.quantity))
        var granted: Int64 = 0
        var unspent: Int64 = 0
        for (credit, amount) in credits where amount > 0 {
            let given = amount * quantity
            granted += given
            unspent += min(max(balances[credit] ?? 0, 0), given)
        }
        guard granted > 0 else { return nil }
        return Int((granted - unspent) * 100_000 / granted)
    }
}
