import TillCatalogue
import TillContract
import TillCore
import TillLedger

/// Whether a customer may download a product's content: a pure rule over the catalogue and the customer's
/// current state, asked when a download URL is made and again when it is used (a refund in between revokes it).
///
/// - A product that grants entitlements opens its content to whoever holds all of them now, by whichever
///   purchase (an upgrade, a bundle, a still-running subscription).
/// - A product that grants none opens it to whoever owns a purchase of it that was not refunded or revoked.
/// - Consumables deliver no content.
enum ContentAccess {
    enum Decision: Sendable, Hashable {
        case granted
        case refused(reason: String)
    }

    static func decide(_ product: CatalogProduct, for customer: CustomerView) -> Decision {
        if product.type == .consumable {
            return .refused(reason: "\(product.productId) is a consumable: it delivers no content")
        }
        if !product.entitlements.isEmpty {
            let held = Set(customer.entitlements.map(\.id))
            let missing = product.entitlements.filter { !held.contains($0) }
            guard missing.isEmpty else {
                return .refused(
                    reason: "customer \(customer.customerId) does not have \(missing.joined(separator: ", ")) now"
                )
            }
            return .granted
        }
        let owns = customer.purchases.contains { $0.productId == product.productId && $0.revocationDate == nil }
        return owns
            ? .granted
            : .refused(reason: "customer \(customer.customerId) owns no unrevoked purchase of \(product.productId)")
    }
}
