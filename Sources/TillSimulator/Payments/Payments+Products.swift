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
        environment: AppStoreEnvironment
    ) async throws -> ProductsResponse {
        try await faultsForStoreKit(environment)
        let app = try await store.requireApp(bundleId: bundleId, on: store.sql)
        var products: [StoreProduct] = []
        var invalid: [String] = []
        for id in productIds {
            guard let product = try await store.product(appAppleId: app.appAppleId, productId: id, on: store.sql),
                product.reviewState.isSellable(in: environment), let price = product.prices[storefront]
            else {
                invalid.append(id)
                continue
            }
            let text =
                product.localizations[locale] ?? product.localizations["en-US"] ?? product.localizations.values.first
            products.append(
                StoreProduct(
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
            )
        }
        return ProductsResponse(products: products, invalidProductIdentifiers: invalid)
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
