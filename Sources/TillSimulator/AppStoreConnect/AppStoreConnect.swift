import Crypto
import Foundation
import HTTPTypes
import Logging
import SQLKit
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

/// The App Store Connect admin: apps, their keys and shared secrets, products, sandbox accounts and devices.
public struct AppStoreConnect: Sendable {
    let database: TillDatabase
    let store: SimulatorStore
    let clock: SimulatorClock
    let subscriptions: SubscriptionEngine
}

/// A new app in App Store Connect.
public struct AppInput: Codable, Sendable {
    public var appAppleId: Int64?
    public var bundleId: String
    public var name: String?
    public var sharedSecret: String?
    public var notificationUrlProduction: String?
    public var notificationUrlSandbox: String?
    public var gracePeriodDays: Int?

    public init(
        appAppleId: Int64? = nil,
        bundleId: String,
        name: String? = nil,
        sharedSecret: String? = nil,
        notificationUrlProduction: String? = nil,
        notificationUrlSandbox: String? = nil,
        gracePeriodDays: Int? = nil
    ) {
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.name = name
        self.sharedSecret = sharedSecret
        self.notificationUrlProduction = notificationUrlProduction
        self.notificationUrlSandbox = notificationUrlSandbox
        self.gracePeriodDays = gracePeriodDays
    }
}

/// Changes to an app; absent fields stay as they are (an empty URL removes it).
public struct AppPatch: Codable, Sendable {
    public var name: String?
    public var notificationUrlProduction: String?
    public var notificationUrlSandbox: String?
    public var gracePeriodDays: Int?

    public init(
        name: String? = nil,
        notificationUrlProduction: String? = nil,
        notificationUrlSandbox: String? = nil,
        gracePeriodDays: Int? = nil
    ) {
        self.name = name
        self.notificationUrlProduction = notificationUrlProduction
        self.notificationUrlSandbox = notificationUrlSandbox
        self.gracePeriodDays = gracePeriodDays
    }
}

/// An App Store Server API key as App Store Connect hands it out once: the private key is not kept.
public struct APIKeyCredentials: Codable, Sendable {
    public var keyId: String
    public var issuerId: String
    public var bundleId: String
    /// PKCS#8 PEM of the P-256 key (the content of the downloaded .p8 file).
    public var privateKey: String
}

/// A new customer account (a production Apple ID or a sandbox tester), or the fields to change.
public struct AccountInput: Codable, Sendable {
    public var environment: String?
    public var email: String?
    public var storefront: String?
    public var canMakePayments: Bool?
    /// A StoreKit error code every payment fails with, or -1 to clear it.
    public var paymentFailure: Int?
    public var askToBuy: Bool?
    public var familyId: String?

    public init(
        environment: String? = nil,
        email: String? = nil,
        storefront: String? = nil,
        canMakePayments: Bool? = nil,
        paymentFailure: Int? = nil,
        askToBuy: Bool? = nil,
        familyId: String? = nil
    ) {
        self.environment = environment
        self.email = email
        self.storefront = storefront
        self.canMakePayments = canMakePayments
        self.paymentFailure = paymentFailure
        self.askToBuy = askToBuy
        self.familyId = familyId
    }
}

/// A new device for an account.
public struct DeviceInput: Codable, Sendable {
    public var name: String?
    public var vendorIdentifier: String?

    public init(name: String? = nil, vendorIdentifier: String? = nil) {
        self.name = name
        self.vendorIdentifier = vendorIdentifier
    }
}

extension AppStoreConnect {
    // MARK: Apps

    public func createApp(_ input: AppInput) async throws -> SimApp {
        guard !input.bundleId.isEmpty, input.bundleId.count <= 155, !input.bundleId.contains(" ") else {
            throw AppStoreConnectRefusal(
                .invalidBundleId,
                "a bundle id is a reverse-DNS string, got \(input.bundleId)"
            )
        }
        let grace = input.gracePeriodDays ?? 0
        try Self.validate(gracePeriodDays: grace)
        try Self.validate(url: input.notificationUrlProduction)
        try Self.validate(url: input.notificationUrlSandbox)
        let app = SimApp(
            appAppleId: input.appAppleId ?? Int64.random(in: 1_000_000_000...1_999_999_999),
            bundleId: input.bundleId,
            name: input.name ?? input.bundleId,
            sharedSecret: input.sharedSecret ?? Self.makeSharedSecret(),
            notificationUrlProduction: input.notificationUrlProduction.flatMap { $0.isEmpty ? nil : $0 },
            notificationUrlSandbox: input.notificationUrlSandbox.flatMap { $0.isEmpty ? nil : $0 },
            gracePeriodDays: grace,
            createdAt: clock.nowMilliseconds
        )
        return try await database.transaction { db in
            if try await self.store.appStoreConnect.app(bundleId: app.bundleId, on: db) != nil {
                throw AppStoreConnectRefusal(.appExists, "an app with bundle id \(app.bundleId) exists")
            }
            if try await self.store.appStoreConnect.app(appAppleId: app.appAppleId, on: db) != nil {
                throw AppStoreConnectRefusal(.appExists, "an app with Apple id \(app.appAppleId) exists")
            }
            try await self.store.insert(app, on: db)
            return app
        }
    }

    public func updateApp(appAppleId: Int64, _ patch: AppPatch) async throws -> SimApp {
        try Self.validate(url: patch.notificationUrlProduction)
        try Self.validate(url: patch.notificationUrlSandbox)
        if let grace = patch.gracePeriodDays { try Self.validate(gracePeriodDays: grace) }
        return try await database.transaction { db in
            var app = try await store.requireApp(appAppleId: appAppleId, on: db)
            if let name = patch.name { app.name = name }
            if let url = patch.notificationUrlProduction { app.notificationUrlProduction = url.isEmpty ? nil : url }
            if let url = patch.notificationUrlSandbox { app.notificationUrlSandbox = url.isEmpty ? nil : url }
            if let grace = patch.gracePeriodDays { app.gracePeriodDays = grace }
            try await self.store.update(app, on: db)
            return app
        }
    }

    /// A new shared secret: verifyReceipt answers 21004 to the old one from now on.
    public func rotateSharedSecret(appAppleId: Int64) async throws -> SimApp {
        try await database.transaction { db in
            var app = try await store.requireApp(appAppleId: appAppleId, on: db)
            app.sharedSecret = Self.makeSharedSecret()
            try await self.store.update(app, on: db)
            return app
        }
    }

    public func apps() async throws -> [SimApp] { try await store.appStoreConnect.apps(on: store.sql) }

    public func app(appAppleId: Int64) async throws -> SimApp {
        try await store.requireApp(appAppleId: appAppleId, on: store.sql)
    }

    /// A new App Store Server API key for an app; the private key is returned once and not kept.
    public func createAPIKey(appAppleId: Int64) async throws -> APIKeyCredentials {
        let app = try await store.requireApp(appAppleId: appAppleId, on: store.sql)
        let key = P256.Signing.PrivateKey()
        let keyId = String((0..<10).map { _ in Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789").randomElement()! })
        let issuerId = UUID().uuidString.lowercased()
        try await store.insert(
            SimAPIKey(
                keyId: keyId,
                appAppleId: app.appAppleId,
                issuerId: issuerId,
                publicKeyPem: key.publicKey.pemRepresentation,
                createdAt: clock.nowMilliseconds
            ),
            on: store.sql
        )
        return APIKeyCredentials(
            keyId: keyId,
            issuerId: issuerId,
            bundleId: app.bundleId,
            privateKey: key.pemRepresentation
        )
    }

    static func makeSharedSecret() -> String {
        (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    static func validate(gracePeriodDays: Int) throws {
        guard [0, 3, 16, 28].contains(gracePeriodDays) else {
            throw AppStoreConnectRefusal(.invalidGracePeriod, "the billing grace period is 0, 3, 16 or 28 days")
        }
    }

    static func validate(url: String?) throws {
        guard let url, !url.isEmpty else { return }
        guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil else {
            throw AppStoreConnectRefusal(.invalidURL, "a notification URL is http(s)://host/…, got \(url)")
        }
    }

    // MARK: Products

    public func createProduct(appAppleId: Int64, _ input: ProductInput) async throws -> SimProduct {
        guard let productId = input.productId, !productId.isEmpty, productId.count <= 100 else {
            throw AppStoreConnectRefusal(.invalidProductId, "productId is required (at most 100 characters)")
        }
        guard let type = input.type else {
            throw AppStoreConnectRefusal(
                .invalidProductType,
                "type is consumable, nonConsumable, autoRenewable, nonRenewing or freeSubscription"
            )
        }
        var product = SimProduct(
            appAppleId: appAppleId,
            productId: productId,
            type: type,
            referenceName: input.referenceName ?? productId,
            reviewState: input.reviewState ?? .readyForSale,
            subscriptionGroup: nil,
            subscriptionPeriod: nil,
            groupLevel: 1,
            familyShareable: false,
            prices: [:],
            localizations: [:],
            createdAt: clock.nowMilliseconds
        )
        try apply(input, to: &product)
        let created = product
        return try await database.transaction { db in
            _ = try await store.requireApp(appAppleId: appAppleId, on: db)
            if try await self.store.appStoreConnect.product(appAppleId: appAppleId, productId: productId, on: db) != nil
            {
                throw AppStoreConnectRefusal(.productExists, "product \(productId) exists")
            }
            try await self.store.appStoreConnect.upsert(created, on: db)
            return created
        }
    }

    public func updateProduct(appAppleId: Int64, productId: String, _ input: ProductInput) async throws -> SimProduct {
        try await database.transaction { db in
            guard
                var product = try await self.store.appStoreConnect.product(
                    appAppleId: appAppleId,
                    productId: productId,
                    on: db
                )
            else {
                throw AppStoreConnectRefusal(.productNotFound, "no product \(productId)")
            }
            if let type = input.type, type != product.type {
                throw AppStoreConnectRefusal(.typeIsFixed, "a product's type cannot change")
            }
            try self.apply(input, to: &product)
            try await self.store.appStoreConnect.upsert(product, on: db)
            return product
        }
    }

    public func products(appAppleId: Int64) async throws -> [SimProduct] {
        _ = try await store.requireApp(appAppleId: appAppleId, on: store.sql)
        return try await store.appStoreConnect.products(appAppleId: appAppleId, on: store.sql)
    }

    /// Where Apple does not offer monthly plans with a 12-month commitment.
    static let storefrontsWithoutCommitmentPlans: Set<String> = ["USA", "SGP"]

    func apply(_ input: ProductInput, to product: inout SimProduct) throws {
        if let name = input.referenceName { product.referenceName = name }
        if let state = input.reviewState { product.reviewState = state }
        if let shareable = input.familyShareable { product.familyShareable = shareable }
        if let prices = input.prices { product.prices = prices }
        if let price = input.price {
            product.prices["USA"] = StorefrontPrice(price: price, currency: input.currency ?? "USD")
        }
        if let localizations = input.localizations { product.localizations = localizations }
        if input.title != nil || input.description != nil {
            let current = product.localizations["en-US"]
            product.localizations["en-US"] = Localization(
                title: input.title ?? current?.title ?? product.referenceName,
                description: input.description ?? current?.description ?? ""
            )
        }
        if product.type.isFree {
            product.prices = product.prices.mapValues { StorefrontPrice(price: 0, currency: $0.currency) }
        }
        if product.prices.isEmpty {
            product.prices["USA"] = StorefrontPrice(price: product.type.isFree ? 0 : 990, currency: "USD")
        }
        guard product.prices.values.allSatisfy({ $0.price >= 0 && $0.currency.count == 3 }) else {
            throw AppStoreConnectRefusal(.invalidPrice, "prices are non-negative milliunits of a 3-letter currency")
        }
        if product.type == .autoRenewable {
            product.subscriptionGroup = input.subscriptionGroup ?? product.subscriptionGroup
            product.subscriptionPeriod = input.subscriptionPeriod ?? product.subscriptionPeriod
            product.groupLevel = input.groupLevel ?? product.groupLevel
            guard product.subscriptionGroup?.isEmpty == false, product.subscriptionPeriod != nil else {
                throw AppStoreConnectRefusal(
                    .subscriptionNeedsGroup,
                    "an auto-renewable subscription needs subscriptionGroup and subscriptionPeriod (P1W … P1Y)"
                )
            }
            guard product.groupLevel >= 1 else {
                throw AppStoreConnectRefusal(.invalidGroupLevel, "groupLevel starts at 1 (the highest)")
            }
            if let monthly = input.monthlyCommitmentPrices {
                guard product.subscriptionPeriod == .oneYear || monthly.isEmpty else {
                    throw AppStoreConnectRefusal(
                        .invalidBillingPlan,
                        "a monthly commitment plan is for 1-year subscriptions"
                    )
                }
                guard monthly.keys.allSatisfy({ !Self.storefrontsWithoutCommitmentPlans.contains($0) }),
                    monthly.values.allSatisfy({ $0.price > 0 && $0.currency.count == 3 })
                else {
                    throw AppStoreConnectRefusal(
                        .invalidBillingPlan,
                        "monthly commitment prices are positive milliunits, in storefronts other than USA and SGP"
                    )
                }
                product.monthlyCommitmentPrices = monthly.isEmpty ? nil : monthly
            }
        } else if input.subscriptionGroup != nil || input.subscriptionPeriod != nil
            || input.monthlyCommitmentPrices != nil
        {
            throw AppStoreConnectRefusal(
                .notASubscription,
                "only auto-renewable subscriptions have a group and a period"
            )
        }
    }

}
