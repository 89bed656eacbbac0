import Foundation
import SQLKit
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

/// Subscription and one-time offers: what App Store Connect sets up (introductory offers, promotional offers,
/// offer codes with their one-time-use or custom codes, win-back offers), and the App Store's rules for who gets
/// which, checked when a payment is made (``Offers/choose(for:account:app:product:on:)``).
public struct Offers: Sendable {
    let database: TillDatabase
    let store: SimulatorStore
    let clock: SimulatorClock
}

/// A new offer, as App Store Connect takes it.
public struct OfferInput: Codable, Sendable {
    public var kind: OfferKind
    public var offerIdentifier: String?
    public var discountType: OfferDiscountType
    /// ISO 8601 (`P3D`, `P1W`, `P2W`, `P1M`, … `P1Y`): a free trial's or pay-up-front offer's length; for pay as you
    /// go, the product's billing period (the default).
    public var duration: String?
    /// Pay as you go: how many billing periods.
    public var periods: Int?
    public var prices: [String: StorefrontPrice]?
    /// Shortcut: the `USA` price in milliunits of `currency` (USD by default).
    public var price: Int64?
    public var currency: String?
    public var customCode: String?
    public var redemptionLimit: Int?
    public var minimumPaidDays: Int?
    public var minimumDaysSinceExpiry: Int?
    public var maximumDaysSinceExpiry: Int?

    public init(
        kind: OfferKind,
        offerIdentifier: String? = nil,
        discountType: OfferDiscountType,
        duration: String? = nil,
        periods: Int? = nil,
        prices: [String: StorefrontPrice]? = nil,
        price: Int64? = nil,
        currency: String? = nil,
        customCode: String? = nil,
        redemptionLimit: Int? = nil,
        minimumPaidDays: Int? = nil,
        minimumDaysSinceExpiry: Int? = nil,
        maximumDaysSinceExpiry: Int? = nil
    ) {
        self.kind = kind
        self.offerIdentifier = offerIdentifier
        self.discountType = discountType
        self.duration = duration
        self.periods = periods
        self.prices = prices
        self.price = price
        self.currency = currency
        self.customCode = customCode
        self.redemptionLimit = redemptionLimit
        self.minimumPaidDays = minimumPaidDays
        self.minimumDaysSinceExpiry = minimumDaysSinceExpiry
        self.maximumDaysSinceExpiry = maximumDaysSinceExpiry
    }
}

/// The offer a payment gets, and the code it was redeemed with.
struct OfferChoice: Sendable, Hashable {
    var offer: SimOffer
    var code: String?
}

extension Offers {
    /// The durations App Store Connect offers for free trials and for pay-up-front offers.
    static let freeTrialDurations: Set<String> = ["P3D", "P1W", "P2W", "P1M", "P2M", "P3M", "P6M", "P1Y"]
    static let payUpFrontDurations: Set<String> = ["P1M", "P2M", "P3M", "P6M", "P1Y"]

    // MARK: App Store Connect

    public func createOffer(appAppleId: Int64, productId: String, _ input: OfferInput) async throws -> SimOffer {
        try await database.transaction { db in
            _ = try await self.store.requireApp(appAppleId: appAppleId, on: db)
            guard
                let product = try await self.store.appStoreConnect.product(
                    appAppleId: appAppleId,
                    productId: productId,
                    on: db
                )
            else { throw OfferRefusal(.productNotFound, "no product \(productId)") }
            let offer = try self.checked(input, product: product)
            if try await self.store.offers.offer(
                appAppleId: appAppleId,
                productId: productId,
                kind: offer.kind,
                offerIdentifier: offer.offerIdentifier,
                on: db
            ) != nil {
                throw OfferRefusal(
                    .offerExists,
                    "\(productId) already has the \(offer.kind.rawValue) offer \(offer.offerIdentifier)"
                )
            }
            if let code = offer.customCode {
                let custom = try await self.store.offers.offer(customCode: code, appAppleId: appAppleId, on: db)
                let oneTime = try await self.store.offers.offerCode(code, on: db)
                guard custom == nil, oneTime == nil else {
                    throw OfferRefusal(.codeExists, "the code \(code) is taken")
                }
            }
            try await self.store.offers.insert(offer, on: db)
            return offer
        }
    }

    public func offers(appAppleId: Int64, productId: String?) async throws -> [SimOffer] {
        _ = try await store.requireApp(appAppleId: appAppleId, on: store.sql)
        return try await store.offers.offers(appAppleId: appAppleId, productId: productId, on: store.sql)
    }

    public func deleteOffer(appAppleId: Int64, productId: String, kind: OfferKind, offerIdentifier: String)
        async throws
    {
        guard
            try await store.offers.offer(
                appAppleId: appAppleId,
                productId: productId,
                kind: kind,
                offerIdentifier: offerIdentifier,
                on: store.sql
            ) != nil
        else { throw OfferRefusal(.offerNotFound, "no offer \(productId)/\(kind.rawValue)/\(offerIdentifier)") }
        try await store.offers.deleteOffer(
            appAppleId: appAppleId,
            productId: productId,
            kind: kind,
            offerIdentifier: offerIdentifier,
            on: store.sql
        )
    }

    /// One-time-use codes for an offer code (App Store Connect generates them in batches).
    public func generateCodes(appAppleId: Int64, productId: String, offerIdentifier: String, count: Int) async throws
        -> [String]
    {
        guard (1...1000).contains(count) else {
            throw OfferRefusal(.invalidCount, "count is 1 to 1000")
        }
        return try await database.transaction { db in
            guard
                let offer = try await self.store.offers.offer(
                    appAppleId: appAppleId,
                    productId: productId,
                    kind: .offerCode,
                    offerIdentifier: offerIdentifier,
                    on: db
                ), offer.customCode == nil
            else {
                throw OfferRefusal(
                    .offerCodeNotFound,
                    "no offerCode \(productId)/\(offerIdentifier) (one-time-use codes are for an offer code without a custom code)"
                )
            }
            let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
            var codes: [String] = []
            for _ in 0..<count {
                let code = String((0..<11).map { _ in alphabet.randomElement()! })
                try await self.store.insert(
                    SimOfferCode(
                        code: code,
                        appAppleId: appAppleId,
                        productId: productId,
                        offerIdentifier: offerIdentifier,
                        createdAt: self.clock.nowMilliseconds
                    ),
                    on: db
                )
                codes.append(code)
            }
            return codes
        }
    }

    /// App Store Connect's rules for an offer of `product`.
    private func checked(_ input: OfferInput, product: SimProduct) throws -> SimOffer {
        func refuse(_ message: String) -> OfferRefusal { OfferRefusal(.invalidOffer, message) }
        let subscription = product.type == .autoRenewable
        let subscriptionModes: Set<OfferDiscountType> = [.freeTrial, .payAsYouGo, .payUpFront]
        switch input.kind {
        case .introductory, .promotional, .winBack:
            guard subscription else {
                throw refuse("\(input.kind.rawValue) offers are for auto-renewable subscriptions")
            }
            guard subscriptionModes.contains(input.discountType) else {
                throw refuse("a subscription offer is FREE_TRIAL, PAY_AS_YOU_GO or PAY_UP_FRONT")
            }
        case .offerCode:
            if subscription {
                guard subscriptionModes.contains(input.discountType) else {
                    throw refuse("a subscription offer code is FREE_TRIAL, PAY_AS_YOU_GO or PAY_UP_FRONT")
                }
            } else {
                guard input.discountType == .oneTime, product.type != .freeSubscription else {
                    throw refuse("an offer code for a one-time product is ONE_TIME")
                }
            }
        }
        let identifier = input.kind == .introductory ? "" : (input.offerIdentifier ?? "")
        if input.kind == .introductory {
            guard input.offerIdentifier?.isEmpty ?? true else {
                throw refuse("an introductory offer has no identifier")
            }
        } else {
            // As App Store Connect's identifiers: letters, digits, periods, hyphens and underscores.
            guard (1...64).contains(identifier.count),
                identifier.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) })
            else { throw refuse("offerIdentifier is 1 to 64 letters, digits, periods, hyphens or underscores") }
        }
        var duration: OfferDuration?
        var periods = 1
        switch input.discountType {
        case .freeTrial, .payUpFront:
            let allowed = input.discountType == .freeTrial ? Self.freeTrialDurations : Self.payUpFrontDurations
            guard let text = input.duration, allowed.contains(text), let parsed = OfferDuration(text) else {
                throw refuse("duration is one of \(allowed.sorted().joined(separator: ", "))")
            }
            duration = parsed
        case .payAsYouGo:
            let period = OfferDuration(product.subscriptionPeriod ?? .oneMonth)
            guard input.duration == nil || input.duration == period.description else {
                throw refuse("a pay-as-you-go offer is billed every \(period), the product's period")
            }
            guard let count = input.periods, (1...12).contains(count) else { throw refuse("periods is 1 to 12") }
            duration = period
            periods = count
        default:
            guard input.duration == nil, input.periods == nil else { throw refuse("a ONE_TIME offer has no duration") }
        }
        var prices = input.prices ?? [:]
        if let price = input.price { prices["USA"] = StorefrontPrice(price: price, currency: input.currency ?? "USD") }
        if input.discountType == .freeTrial {
            guard prices.isEmpty else { throw refuse("a free trial has no price") }
        } else {
            guard !prices.isEmpty, prices.values.allSatisfy({ $0.price >= 0 && $0.price <= 1_000_000_000 }) else {
                throw refuse("give the offer's price (price, or prices by storefront) in milliunits")
            }
        }
        for (storefront, price) in prices {
            guard let regular = product.prices[storefront] else {
                throw refuse(
                    "\(product.productId) is not sold in \(storefront): an offer is priced where its product is"
                )
            }
            guard price.currency == regular.currency else {
                throw refuse("in \(storefront) the offer is priced in \(regular.currency), as its product")
            }
            if input.discountType == .payAsYouGo || input.discountType == .oneTime, price.price >= regular.price {
                throw refuse(
                    "a \(input.discountType) offer is a discount: below the product's \(regular.price) in \(storefront)"
                )
            }
        }
        if let minimum = input.minimumDaysSinceExpiry, let maximum = input.maximumDaysSinceExpiry, minimum > maximum {
            throw refuse("minimumDaysSinceExpiry is not above maximumDaysSinceExpiry: the offer could never apply")
        }
        if input.customCode != nil || input.redemptionLimit != nil {
            guard input.kind == .offerCode else { throw refuse("only offer codes have a custom code") }
        }
        if let code = input.customCode {
            guard (1...64).contains(code.count), code.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                throw refuse("a custom code is 1 to 64 letters and digits")
            }
        }
        if let limit = input.redemptionLimit, limit < 1 { throw refuse("redemptionLimit is at least 1") }
        let criteria = [input.minimumPaidDays, input.minimumDaysSinceExpiry, input.maximumDaysSinceExpiry]
        if criteria.contains(where: { $0 != nil }) {
            guard input.kind == .winBack else { throw refuse("only win-back offers have eligibility days") }
            guard criteria.allSatisfy({ ($0 ?? 0) >= 0 }) else { throw refuse("eligibility days are not negative") }
        }
        return SimOffer(
            appAppleId: product.appAppleId,
            productId: product.productId,
            kind: input.kind,
            offerIdentifier: identifier,
            discountType: input.discountType,
            duration: duration,
            periods: periods,
            prices: prices,
            customCode: input.customCode?.uppercased(),
            redemptionLimit: input.redemptionLimit,
            minimumPaidDays: input.minimumPaidDays,
            minimumDaysSinceExpiry: input.minimumDaysSinceExpiry,
            maximumDaysSinceExpiry: input.maximumDaysSinceExpiry,
            createdAt: clock.nowMilliseconds
        )
    }
}
