import Foundation
import TillCore

/// A product as the store shows it to the customer: StoreKit 2's `Product`, StoreKit 1's `SKProduct`.
public struct StoreProduct: Sendable, Hashable, Identifiable {
    public var id: String
    /// Nil where the store does not say (StoreKit 1 tells only auto-renewable subscriptions apart).
    public var type: ProductType?
    /// Localized for the device.
    public var displayName: String
    public var description: String
    /// The price in the storefront's currency.
    public var price: Decimal
    /// The price as the storefront shows it, e.g. `$0.99`.
    public var displayPrice: String
    /// ISO 4217, e.g. `USD`.
    public var currencyCode: String
    public var isFamilyShareable: Bool
    /// An auto-renewable subscription's group, period and offers.
    public var subscription: StoreSubscriptionInfo?

    public init(
        id: String,
        type: ProductType?,
        displayName: String,
        description: String,
        price: Decimal,
        displayPrice: String,
        currencyCode: String,
        isFamilyShareable: Bool = false,
        subscription: StoreSubscriptionInfo? = nil
    ) {
        self.id = id
        self.type = type
        self.displayName = displayName
        self.description = description
        self.price = price
        self.displayPrice = displayPrice
        self.currencyCode = currencyCode
        self.isFamilyShareable = isFamilyShareable
        self.subscription = subscription
    }

    /// The price in thousandths of the currency (990 is 0.99), as the server's API writes amounts.
    public var priceInMilliunits: Int64 {
        NSDecimalNumber(decimal: price * 1000).int64Value
    }
}

/// An auto-renewable subscription's details (StoreKit 2's `Product.SubscriptionInfo`).
public struct StoreSubscriptionInfo: Sendable, Hashable {
    public var groupId: String
    public var period: StoreSubscriptionPeriod
    public var introductoryOffer: StoreSubscriptionOffer?
    /// Whether this customer would get the introductory offer (`isEligibleForIntroOffer`); nil when the store
    /// cannot say (StoreKit 1, which leaves it to the app's receipt).
    public var isEligibleForIntroOffer: Bool?
    /// The offers the app may give with the developer's signature.
    public var promotionalOffers: [StoreSubscriptionOffer]
    /// The win-back offers this customer may redeem now, best first (iOS 18).
    public var winBackOffers: [StoreSubscriptionOffer]

    public init(
        groupId: String,
        period: StoreSubscriptionPeriod,
        introductoryOffer: StoreSubscriptionOffer? = nil,
        isEligibleForIntroOffer: Bool? = nil,
        promotionalOffers: [StoreSubscriptionOffer] = [],
        winBackOffers: [StoreSubscriptionOffer] = []
    ) {
        self.groupId = groupId
        self.period = period
        self.introductoryOffer = introductoryOffer
        self.isEligibleForIntroOffer = isEligibleForIntroOffer
        self.promotionalOffers = promotionalOffers
        self.winBackOffers = winBackOffers
    }
}

/// A subscription offer (StoreKit 2's `Product.SubscriptionOffer`, StoreKit 1's `SKProductDiscount`).
public struct StoreSubscriptionOffer: Sendable, Hashable {
    public enum OfferType: String, Sendable, Hashable {
        case introductory
        case promotional
        case winBack
        case offerCode
    }

    public enum PaymentMode: String, Sendable, Hashable {
        case freeTrial
        case payAsYouGo
        case payUpFront
    }

    /// Nil for the introductory offer.
    public var id: String?
    public var type: OfferType
    public var paymentMode: PaymentMode
    /// Per period when paying as you go, for the whole offer when paying up front, 0 for a free trial.
    public var price: Decimal
    public var displayPrice: String
    /// One period of the offer, and how many of them.
    public var period: StoreSubscriptionPeriod
    public var periodCount: Int

    public init(
        id: String?,
        type: OfferType,
        paymentMode: PaymentMode,
        price: Decimal,
        displayPrice: String,
        period: StoreSubscriptionPeriod,
        periodCount: Int
    ) {
        self.id = id
        self.type = type
        self.paymentMode = paymentMode
        self.price = price
        self.displayPrice = displayPrice
        self.period = period
        self.periodCount = periodCount
    }
}

/// A length of time a subscription or offer runs (StoreKit 2's `Product.SubscriptionPeriod`).
public struct StoreSubscriptionPeriod: Sendable, Hashable, CustomStringConvertible {
    public enum Unit: String, Sendable, Hashable {
        case day
        case week
        case month
        case year

        var iso8601: Character {
            switch self {
            case .day: "D"
            case .week: "W"
            case .month: "M"
            case .year: "Y"
            }
        }
    }

    public var value: Int
    public var unit: Unit

    public init(value: Int, unit: Unit) {
        self.value = value
        self.unit = unit
    }

    /// A period written as ISO 8601 with one unit (`P1W`, `P3M`, `P1Y`); nil for anything else.
    public init?(iso8601 text: String) {
        guard text.count >= 3, text.first == "P", let last = text.last,
            let value = Int(text.dropFirst().dropLast()), value > 0
        else { return nil }
        switch last {
        case "D": self.init(value: value, unit: .day)
        case "W": self.init(value: value, unit: .week)
        case "M": self.init(value: value, unit: .month)
        case "Y": self.init(value: value, unit: .year)
        default: return nil
        }
    }

    /// ISO 8601, e.g. `P1M`.
    public var iso8601: String { "P\(value)\(unit.iso8601)" }

    public var description: String { iso8601 }
}

/// The answer to a products request: the products the store sells here, and the identifiers it does not.
public struct ProductLookup: Sendable, Hashable {
    public var products: [StoreProduct]
    public var invalidProductIds: [String]

    public init(products: [StoreProduct], invalidProductIds: [String]) {
        self.products = products
        self.invalidProductIds = invalidProductIds
    }
}
