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
    /// A subscription's introductory offer, and whether this customer would get it
    /// (`Product.SubscriptionInfo.introductoryOffer`, `isEligibleForIntroOffer`).
    public var introductoryOffer: StorefrontOffer?
    public var isEligibleForIntroOffer: Bool?
    /// The promotional offers the app may give with a signature (`promotionalOffers`).
    public var promotionalOffers: [StorefrontOffer]?
    /// The win-back offers the customer may redeem now, best first (`winBackOffers`).
    public var winBackOffers: [StorefrontOffer]?

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

/// A subscription offer as the store shows it (`Product.SubscriptionOffer`).
public struct StorefrontOffer: Sendable, Hashable, Codable {
    /// Nil for the introductory offer.
    public var id: String?
    /// `introductory`, `promotional` or `winBack`.
    public var type: String
    /// `FREE_TRIAL`, `PAY_AS_YOU_GO` or `PAY_UP_FRONT`.
    public var paymentMode: String
    /// Milliunits: per period (pay as you go), for the whole offer (pay up front), 0 for a free trial.
    public var price: Int64
    public var displayPrice: String
    /// One period (ISO 8601) and how many of them.
    public var period: String?
    public var periodCount: Int
}
