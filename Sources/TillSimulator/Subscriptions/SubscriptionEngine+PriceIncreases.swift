import Foundation
import SQLKit
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

/// A price increase of an auto-renewable subscription in a storefront (App Store Connect), and the customers'
/// answers. New customers pay the new price at once; subscribers keep theirs until their next renewal, and pay the
/// new one only if they consented (when consent is required) — else the subscription expires (EXPIRED /
/// PRICE_INCREASE, `expirationIntent` 3).
public struct PriceIncreaseInput: Codable, Sendable {
    /// The storefront (ISO 3166-1 alpha-3); `USA` by default.
    public var storefront: String?
    /// The new price, in milliunits of the storefront's currency.
    public var price: Int64
    /// Whether subscribers must consent. By default Apple's rule decides: an increase of more than 50 % that is also
    /// more than 5 units a period (50 a year for annual plans) needs consent; a smaller one is only notified.
    public var requiresConsent: Bool?

    public init(storefront: String? = nil, price: Int64, requiresConsent: Bool? = nil) {
        self.storefront = storefront
        self.price = price
        self.requiresConsent = requiresConsent
    }
}

/// What a price increase did.
public struct PriceIncreaseResult: Codable, Sendable {
    public var productId: String
    public var storefront: String
    public var price: Int64
    public var requiresConsent: Bool
    /// The subscriptions told of it (PRICE_INCREASE / PENDING or ACCEPTED).
    public var subscriptions: [String]
}

extension SubscriptionEngine {
    public func increasePrice(appAppleId: Int64, productId: String, _ input: PriceIncreaseInput) async throws
        -> PriceIncreaseResult
    {
        let storefront = input.storefront ?? "USA"
        let result = try await database.transaction { db -> PriceIncreaseResult in
            let app = try await self.store.requireApp(appAppleId: appAppleId, on: db)
            guard
                var product = try await self.store.appStoreConnect.product(
                    appAppleId: appAppleId,
                    productId: productId,
                    on: db
                ),
                product.type == .autoRenewable
            else {
                throw SubscriptionRefusal(
                    .productNotFound,
                    "no product \(productId) among the auto-renewable subscriptions"
                )
            }
            guard let listed = product.prices[storefront] else {
                throw SubscriptionRefusal(.invalidStorefront, "\(productId) has no price in \(storefront)")
            }
            guard input.price > listed.price, input.price <= 1_000_000_000 else {
                throw SubscriptionRefusal(.invalidPrice, "a price increase is above the current \(listed.price)")
            }
            let consent =
                input.requiresConsent
                ?? Self.needsConsent(
                    from: listed.price,
                    to: input.price,
                    annual: product.subscriptionPeriod == .oneYear
                )
            product.prices[storefront] = StorefrontPrice(price: input.price, currency: listed.currency)
            try await self.store.appStoreConnect.upsert(product, on: db)
            var told: [String] = []
            for var subscription in try await self.store.subscriptions.subscriptions(
                appAppleId: appAppleId,
                productId: productId,
                on: db
            )
            where Offers.isActive(subscription) && subscription.autoRenewProductId == productId {
                guard
                    try await self.store.appStoreConnect.account(id: subscription.accountId, on: db)?.storefront
                        == storefront,
                    (subscription.renewalPrice ?? listed.price) < input.price
                else { continue }
                if consent {
                    subscription.priceIncreaseStatus = 0
                } else {
                    subscription.priceIncreaseStatus = 1
                    subscription.renewalPrice = input.price
                }
                subscription.updatedAt = self.clock.nowMilliseconds
                try await self.store.upsert(subscription, on: db)
                try await self.notify(
                    subscription,
                    type: .priceIncrease,
                    subtype: consent ? .pending : .accepted,
                    app: app,
                    on: db
                )
                told.append(subscription.originalTransactionId)
            }
            return PriceIncreaseResult(
                productId: productId,
                storefront: storefront,
                price: input.price,
                requiresConsent: consent,
                subscriptions: told
            )
        }
        notifications.due.signal()
        return result
    }

    /// The customer answers a price increase that needs consent: accepting makes the next renewal charge the new
    /// price (PRICE_INCREASE / ACCEPTED); declining turns auto-renew off (DID_CHANGE_RENEWAL_STATUS), and the
    /// subscription expires at the end of its period with `expirationIntent` 3.
    public func respondToPriceIncrease(originalTransactionId: String, accept: Bool) async throws -> SimSubscription {
        let result = try await database.transaction { db -> SimSubscription in
            guard
                var subscription = try await self.store.subscriptions.subscription(
                    originalTransactionId: originalTransactionId,
                    on: db
                )
            else { throw SubscriptionRefusal(.subscriptionNotFound, "no subscription \(originalTransactionId)") }
            guard subscription.priceIncreaseStatus == 0 else {
                throw SubscriptionRefusal(
                    .noPendingPriceIncrease,
                    "subscription \(originalTransactionId) has no price increase waiting for consent"
                )
            }
            let app = try await self.store.requireApp(appAppleId: subscription.appAppleId, on: db)
            let account = try await self.store.appStoreConnect.account(id: subscription.accountId, on: db)
            let product = try await self.store.appStoreConnect.product(
                appAppleId: app.appAppleId,
                productId: subscription.autoRenewProductId,
                on: db
            )
            if accept {
                subscription.priceIncreaseStatus = 1
                subscription.renewalPrice =
                    product?.prices[account?.storefront ?? "USA"]?.price
                    ?? subscription.renewalPrice
                subscription.updatedAt = self.clock.nowMilliseconds
                try await self.store.upsert(subscription, on: db)
                try await self.notify(subscription, type: .priceIncrease, subtype: .accepted, app: app, on: db)
            } else if subscription.autoRenewStatus {
                subscription.autoRenewStatus = false
                subscription.updatedAt = self.clock.nowMilliseconds
                try await self.store.upsert(subscription, on: db)
                try await self.notify(
                    subscription,
                    type: .didChangeRenewalStatus,
                    subtype: .autoRenewDisabled,
                    app: app,
                    on: db
                )
            }
            return subscription
        }
        notifications.due.signal()
        return result
    }

    /// Apple's rule for an increase that needs consent (amounts in units of the storefront's currency).
    static func needsConsent(from old: Int64, to new: Int64, annual: Bool) -> Bool {
        let increase = new - old
        return increase * 2 > old && increase > (annual ? 50_000 : 5_000)
    }
}
