import Foundation
import TillCore

/// A new product, or the fields to change.
public struct ProductInput: Codable, Sendable {
    public var productId: String?
    public var type: ProductType?
    public var referenceName: String?
    public var reviewState: ReviewState?
    public var subscriptionGroup: String?
    public var subscriptionPeriod: SubscriptionPeriod?
    public var groupLevel: Int?
    public var familyShareable: Bool?
    /// Prices per storefront, in milliunits.
    public var prices: [String: StorefrontPrice]?
    public var localizations: [String: Localization]?
    /// Shortcuts: the `USA` price in milliunits of `currency` (USD by default), and the `en-US` texts.
    public var price: Int64?
    public var currency: String?
    public var title: String?
    public var description: String?
    /// A 1-year subscription's monthly prices with a 12-month commitment, by storefront (not `USA` or `SGP`, where
    /// Apple does not offer the plan); an empty object removes the plan.
    public var monthlyCommitmentPrices: [String: StorefrontPrice]?

    public init(
        productId: String? = nil,
        type: ProductType? = nil,
        referenceName: String? = nil,
        reviewState: ReviewState? = nil,
        subscriptionGroup: String? = nil,
        subscriptionPeriod: SubscriptionPeriod? = nil,
        groupLevel: Int? = nil,
        familyShareable: Bool? = nil,
        prices: [String: StorefrontPrice]? = nil,
        localizations: [String: Localization]? = nil,
        price: Int64? = nil,
        currency: String? = nil,
        title: String? = nil,
        description: String? = nil,
        monthlyCommitmentPrices: [String: StorefrontPrice]? = nil
    ) {
        self.productId = productId
        self.type = type
        self.referenceName = referenceName
        self.reviewState = reviewState
        self.subscriptionGroup = subscriptionGroup
        self.subscriptionPeriod = subscriptionPeriod
        self.groupLevel = groupLevel
        self.familyShareable = familyShareable
        self.prices = prices
        self.localizations = localizations
        self.price = price
        self.currency = currency
        self.title = title
        self.description = description
        self.monthlyCommitmentPrices = monthlyCommitmentPrices
    }
}
