import Foundation
import TillCore
import TillFormats
import TillStorage

/// A product as StoreKit shows it to an app (`SKProduct` / `Product`).
public struct StoreProduct: Codable, Sendable, Hashable {
    public var productId: String
    public var type: ProductType
    public var title: String
    public var description: String
    /// Milliunits of `currency`.
    public var price: Int64
    public var currency: String
    /// The price as the storefront shows it, e.g. `$9.99`.
    public var displayPrice: String
    public var storefront: String
    public var subscriptionGroup: String?
    public var subscriptionPeriod: SubscriptionPeriod?
    public var familyShareable: Bool
    /// The product's introductory offer, and whether this customer would get it (StoreKit's
    /// `isEligibleForIntroOffer`; nil when the request named no device).
    public var introductoryOffer: StoreOffer?
    public var isEligibleForIntroOffer: Bool?
    /// The promotional offers an app may give with a signature.
    public var promotionalOffers: [StoreOffer]?
    /// The win-back offers this customer may redeem now, best first.
    public var winBackOffers: [StoreOffer]?
    /// A 1-year subscription's monthly plan with a 12-month commitment in this storefront (`billingPlanType`
    /// `MONTHLY` in a payment buys it).
    public var monthlyCommitment: StoreCommitmentPlan?
}

/// A monthly billing plan with a 12-month commitment, as StoreKit shows its price.
public struct StoreCommitmentPlan: Codable, Sendable, Hashable {
    public var billingPlanType: String
    /// Each month's price, in milliunits.
    public var price: Int64
    public var displayPrice: String
    public var totalBillingPeriods: Int
}

/// An offer as StoreKit shows it (`Product.SubscriptionOffer`).
public struct StoreOffer: Codable, Sendable, Hashable {
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

/// The answer to a products request (`SKProductsResponse`).
public struct ProductsResponse: Codable, Sendable {
    public var products: [StoreProduct]
    public var invalidProductIdentifiers: [String]
}

extension Payments {
    /// Looks products up as StoreKit does: those sellable in the environment and priced in the storefront are
    /// valid, every other identifier is returned as invalid.
    public func lookUpProducts(
        bundleId: String,
        productIds: [String],
        storefront: String,
        locale: String = "en-US",
        environment: AppStoreEnvironment,
        account: SimAccount? = nil
    ) async throws -> ProductsResponse {
        try await faultsForStoreKit(environment)
        let app = try await store.requireApp(bundleId: bundleId, on: store.sql)
        var products: [StoreProduct] = []
        var invalid: [String] = []
        for id in productIds {
            guard
                let product = try await store.appStoreConnect.product(
                    appAppleId: app.appAppleId,
                    productId: id,
                    on: store.sql
                ),
                product.reviewState.isSellable(in: environment), let price = product.prices[storefront]
            else {
                invalid.append(id)
                continue
            }
            let text =
                product.localizations[locale] ?? product.localizations["en-US"] ?? product.localizations.values.first
            var item = StoreProduct(
                productId: id,
                type: product.type,
                title: text?.title ?? product.referenceName,
                description: text?.description ?? "",
                price: price.price,
                currency: price.currency,
                displayPrice: Self.displayPrice(price),
                storefront: storefront,
                subscriptionGroup: product.subscriptionGroup,
                subscriptionPeriod: product.subscriptionPeriod,
                familyShareable: product.familyShareable
            )
            if product.type == .autoRenewable {
                try await describeOffers(of: product, in: &item, regular: price, account: account, app: app)
                item.monthlyCommitment = product.monthlyCommitmentPrices?[storefront].map {
                    StoreCommitmentPlan(
                        billingPlanType: BillingPlanType.monthly.rawValue,
                        price: $0.price,
                        displayPrice: Self.displayPrice($0),
                        totalBillingPeriods: 12
                    )
                }
            }
            products.append(item)
        }
        return ProductsResponse(products: products, invalidProductIdentifiers: invalid)
    }

    /// A subscription's offers, as StoreKit lists them for the customer on this device.
    private func describeOffers(
        of product: SimProduct,
        in item: inout StoreProduct,
        regular: StorefrontPrice,
        account: SimAccount?,
        app: SimApp
    ) async throws {
        let db = store.sql
        let offers = try await store.offers.offers(appAppleId: app.appAppleId, productId: product.productId, on: db)
        func view(_ offer: SimOffer) -> StoreOffer {
            let charged = offer.price(in: item.storefront, regular: regular)
            let payAsYouGo = offer.discountType == .payAsYouGo
            return StoreOffer(
                id: offer.kind == .introductory ? nil : offer.offerIdentifier,
                type: offer.kind.rawValue,
                paymentMode: offer.discountType.rawValue,
                price: charged.price,
                displayPrice: Self.displayPrice(charged),
                period: offer.duration?.description,
                periodCount: payAsYouGo ? offer.periods : 1
            )
        }
        item.introductoryOffer = offers.first { $0.kind == .introductory }.map(view)
        item.promotionalOffers = offers.filter { $0.kind == .promotional }.map(view)
        guard let account else { return }
        let group = product.subscriptionGroup ?? product.productId
        let subscription = try await store.subscriptions.subscription(
            accountId: account.id,
            appAppleId: app.appAppleId,
            environment: account.environment,
            group: group,
            on: db
        )
        if item.introductoryOffer != nil {
            let active = subscription.map(Offers.isActive) ?? false
            let hadOne = try await !self.offers.introductoryEligible(account: account, app: app, group: group, on: db)
            item.isEligibleForIntroOffer = !active && !hadOne
        }
        if let subscription {
            let eligible = try await self.offers.eligibleWinBackOfferIds(subscription, on: db)
            item.winBackOffers = eligible.compactMap { id in
                offers.first { $0.kind == .winBack && $0.offerIdentifier == id }.map(view)
            }
        }
    }

    /// Redeems an offer code as the App Store's redemption sheet does: the code names its product and offer; the
    /// purchase follows the offer's rules (a new subscription starts with it, a running one gets it at renewal).
    public func redeemOfferCode(_ code: String, deviceId: String, bundleId: String, environment: AppStoreEnvironment)
        async throws -> QueueTransaction
    {
        let (_, account) = try await store.requireDevice(deviceId, environment: environment, on: store.sql)
        let app = try await store.requireApp(bundleId: bundleId, on: store.sql)
        let choice = try await offers.offer(forCode: code, account: account, app: app, on: store.sql).get()
        return try await addPayment(
            PaymentRequest(
                deviceId: deviceId,
                bundleId: bundleId,
                productId: choice.offer.productId,
                offerCode: code
            ),
            environment: environment
        )
    }

    static func displayPrice(_ price: StorefrontPrice) -> String {
        let symbols = [
            "USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "CAD": "CA$", "AUD": "A$", "CHF": "CHF ", "INR": "₹",
        ]
        let noDecimals = ["JPY", "KRW"]
        let major = Double(price.price) / 1000
        let amount = noDecimals.contains(price.currency) ? String(Int(major.rounded())) : String(format: "%.2f", major)
        return (symbols[price.currency] ?? price.currency + " ") + amount
    }
}
