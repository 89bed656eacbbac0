import Foundation
import TillCore

/// A product as the store shows it to the customer (`SKProduct`; StoreKit 2's `Product`).
public struct StorefrontProduct: Sendable, Hashable, Codable {
    public var productId: String
    /// The store's product type, kept as it came; ``productType`` is the typed view.
    public var type: String
    /// Localized for the device's locale.
    public var title: String
    public var description: String
    /// Milliunits of ``currency`` (990 is 0.99).
    public var price: Int64
    public var currency: String
    /// The price as the storefront shows it, e.g. `$0.99`.
    public var displayPrice: String
    /// The storefront (country) the price is for.
    public var storefront: String?
    public var subscriptionGroup: String?
    /// An ISO 8601 period such as `P1M`.
    public var subscriptionPeriod: String?
    public var familyShareable: Bool?

    public init(
        productId: String,
        type: String,
        title: String,
        description: String,
        price: Int64,
        currency: String,
        displayPrice: String,
        storefront: String? = nil,
        subscriptionGroup: String? = nil,
        subscriptionPeriod: String? = nil,
        familyShareable: Bool? = nil
    ) {
        self.productId = productId
        self.type = type
        self.title = title
        self.description = description
        self.price = price
        self.currency = currency
        self.displayPrice = displayPrice
        self.storefront = storefront
        self.subscriptionGroup = subscriptionGroup
        self.subscriptionPeriod = subscriptionPeriod
        self.familyShareable = familyShareable
    }

    /// The type, when it is one TillCore knows.
    public var productType: ProductType? { ProductType(rawValue: type) }

    /// The price as a decimal amount of ``currency``.
    public var decimalPrice: Decimal { Decimal(price) / 1000 }
}
