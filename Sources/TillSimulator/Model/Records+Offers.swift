import Foundation
import TillCore
import TillFormats

/// The kinds of offer App Store Connect sets up.
public enum OfferKind: String, Codable, Sendable, CaseIterable {
    /// Applied automatically to a customer who never had one in the subscription group.
    case introductory
    /// Given by the developer to an existing or past subscriber, with a signature from the developer's server.
    case promotional
    /// Redeemed with a code: one-time-use codes, or a custom code many customers may type.
    case offerCode
    /// Offered to a lapsed subscriber who meets the offer's criteria.
    case winBack

    /// The transaction's `offerType`.
    public var offerType: OfferType {
        switch self {
        case .introductory: .introductoryOffer
        case .promotional: .promotionalOffer
        case .offerCode: .subscriptionOfferCode
        case .winBack: .winBackOffer
        }
    }
}

/// A duration as App Store Connect writes an offer's: ISO 8601 with one unit, `P3D`, `P1W`, `P2M`, `P1Y`.
public struct OfferDuration: Codable, Sendable, Hashable, CustomStringConvertible {
    public enum Unit: String, Codable, Sendable { case day = "D", week = "W", month = "M", year = "Y" }
    public var count: Int
    public var unit: Unit

    public init(count: Int, unit: Unit) {
        self.count = count
        self.unit = unit
    }

    public init?(_ text: String) {
        guard text.hasPrefix("P"), let last = text.last, let unit = Unit(rawValue: String(last)),
            let count = Int(text.dropFirst().dropLast()), (1...999).contains(count)
        else { return nil }
        self.init(count: count, unit: unit)
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let parsed = OfferDuration(text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "not P<n>D|W|M|Y")
            )
        }
        self = parsed
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    public var description: String { "P\(count)\(unit.rawValue)" }

    /// `count` times this duration, as `offerPeriod` writes a pay-as-you-go offer's whole length.
    func times(_ periods: Int) -> OfferDuration { OfferDuration(count: count * max(1, periods), unit: unit) }

    /// The same duration as a billing period.
    init(_ period: SubscriptionPeriod) {
        switch period {
        case .oneWeek: self.init(count: 1, unit: .week)
        case .oneMonth: self.init(count: 1, unit: .month)
        case .twoMonths: self.init(count: 2, unit: .month)
        case .threeMonths: self.init(count: 3, unit: .month)
        case .sixMonths: self.init(count: 6, unit: .month)
        case .oneYear: self.init(count: 1, unit: .year)
        }
    }

    /// When a span of this duration starting at `start` ends. Accelerated the way Apple's sandbox table has it
    /// (3 days → 2 minutes and a week → 3 minutes against a 5-minute month), in calendar time otherwise.
    func end(from start: Date, rate: RenewalRate) -> Date {
        if let monthSeconds = rate.monthSeconds {
            let months: Double =
                switch unit {
                case .day: Double(count) * 0.4 / 3
                case .week: Double(count) * 0.6
                case .month: Double(count)
                case .year: Double(count) * 12
                }
            return start + monthSeconds * months
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let components: DateComponents =
            switch unit {
            case .day: DateComponents(day: count)
            case .week: DateComponents(day: 7 * count)
            case .month: DateComponents(month: count)
            case .year: DateComponents(year: count)
            }
        return calendar.date(byAdding: components, to: start) ?? start
    }
}

/// An offer of a product, as App Store Connect holds it.
public struct SimOffer: Codable, Sendable, Hashable {
    public var appAppleId: Int64
    public var productId: String
    public var kind: OfferKind
    /// The promotional or win-back offer's identifier, or the offer code's reference name; `""` for the
    /// introductory offer (a product has at most one).
    public var offerIdentifier: String
    public var discountType: OfferDiscountType
    /// How long the free trial or the pay-up-front offer lasts; for pay as you go, the product's billing period;
    /// nil for a one-time product's offer code (`ONE_TIME`), which has no duration.
    public var duration: OfferDuration?
    /// Pay as you go: how many billing periods at the offer price; 1 otherwise.
    public var periods: Int
    /// The offer price per storefront, in milliunits: per period (pay as you go), for the whole offer (pay up
    /// front), the discounted price (one time). Empty for a free trial.
    public var prices: [String: StorefrontPrice]
    /// Offer codes: a custom code customers type (nil for one-time-use codes), and how many redemptions it has.
    public var customCode: String?
    public var redemptionLimit: Int?
    /// Win-back criteria, in days (scaled in the sandbox): paid time in the group at least, and time since the
    /// subscription expired within these bounds.
    public var minimumPaidDays: Int?
    public var minimumDaysSinceExpiry: Int?
    public var maximumDaysSinceExpiry: Int?
    public var createdAt: Int64

    /// The length of the whole offer, as `offerPeriod` carries it (`P2M` for two monthly periods).
    public var offerPeriod: String? { duration?.times(discountType == .payAsYouGo ? periods : 1).description }

    /// Whether the offer is sold in a storefront: a free trial everywhere the product is, a priced offer where it
    /// has a price (App Store Connect sets an offer's territories by its prices).
    func isAvailable(in storefront: String) -> Bool {
        discountType == .freeTrial || prices[storefront] != nil
    }

    /// What the offer charges in a storefront (0 for a free trial).
    func price(in storefront: String, regular: StorefrontPrice) -> StorefrontPrice {
        discountType == .freeTrial
            ? StorefrontPrice(price: 0, currency: regular.currency) : (prices[storefront] ?? regular)
    }
}

/// An offer applied to a transaction, and carried by a subscription to the renewals it still covers.
struct AppliedOffer: Codable, Sendable, Hashable {
    var type: Int
    var identifier: String?
    var discountType: String
    var period: String?
    /// Per period; the whole offer for pay up front.
    var price: Int64
    /// Renewals still at the offer price after the current period.
    var remainingRenewals: Int
}

/// A one-time-use offer code App Store Connect generated for an offer-code offer (stored upper case).
struct SimOfferCode: Codable, Sendable, Hashable {
    var code: String
    var appAppleId: Int64
    var productId: String
    var offerIdentifier: String
    var createdAt: Int64
}

/// An offer a customer bought with, and the code that gave it, if any.
struct SimOfferRedemption: Codable, Sendable, Hashable {
    var id: String
    var appAppleId: Int64
    var accountId: String
    var environment: AppStoreEnvironment
    var productId: String
    var kind: OfferKind
    var offerIdentifier: String
    var code: String?
    var transactionId: String?
    var redeemedAt: Int64
}
