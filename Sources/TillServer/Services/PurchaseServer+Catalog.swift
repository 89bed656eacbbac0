import Crypto
import Foundation
import Logging
import SQLKit
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

/// A catalogue product to create or replace.
public struct CatalogProductInput: Codable, Sendable {
    public var type: ProductType?
    public var title: String?
    public var entitlements: [String]?
    public var credits: [String: Int64]?
    public var subscriptionGroup: String?
    public var durationSeconds: Int64?
    public var price: Int64?
    public var currency: String?
    public var position: Int?

    public init(
        type: ProductType? = nil,
        title: String? = nil,
        entitlements: [String]? = nil,
        credits: [String: Int64]? = nil,
        subscriptionGroup: String? = nil,
        durationSeconds: Int64? = nil,
        price: Int64? = nil,
        currency: String? = nil,
        position: Int? = nil
    ) {
        self.type = type
        self.title = title
        self.entitlements = entitlements
        self.credits = credits
        self.subscriptionGroup = subscriptionGroup
        self.durationSeconds = durationSeconds
        self.price = price
        self.currency = currency
        self.position = position
    }
}

extension PurchaseServer {
    public func createApp(_ input: ServerAppInput) async throws -> ServerApp {
        defer { catalogueChanged() }
        guard let bundleId = input.bundleId, !bundleId.isEmpty, bundleId.count <= 155, !bundleId.contains(" ") else {
            throw TillHTTPError.badRequest("invalidBundleId", "bundleId is a reverse-DNS string")
        }
        let app = ServerApp(
            bundleId: bundleId,
            appAppleId: input.appAppleId,
            name: input.name ?? bundleId,
            appKey: "tk_" + Self.randomToken(),
            sharedSecrets: input.sharedSecrets ?? [],
            apiKeyId: input.apiKeyId,
            apiIssuerId: input.apiIssuerId,
            apiPrivateKey: input.apiPrivateKey,
            acceptSandbox: input.acceptSandbox ?? true,
            restorePolicy: input.restorePolicy ?? .keepWithFirstOwner,
            createdAt: nowMilliseconds
        )
        try validateAPIKey(app)
        return try await database.transaction { db in
            if try await self.store.app(bundleId: bundleId, on: db) != nil {
                throw TillHTTPError.conflict("appExists", "an app with bundle id \(bundleId) exists")
            }
            try await self.store.save(app, on: db)
            return app
        }
    }

    public func updateApp(bundleId: String, _ input: ServerAppInput) async throws -> ServerApp {
        defer { catalogueChanged() }
        // The bundle id is the app's key everywhere (ledger, catalogue, content, links): it names the app and does
        // not change. Saying it again is harmless; saying another one is refused rather than silently ignored.
        if let given = input.bundleId, given != bundleId {
            throw TillHTTPError.badRequest(
                "bundleIdImmutable",
                "an app's bundle id cannot change; create an app for \(given) instead"
            )
        }
        let (app, before) = try await database.transaction { db in
            var app = try await self.requireApp(bundleId: bundleId, on: db)
            let before = app
            if let value = input.appAppleId { app.appAppleId = value }
            if let value = input.name { app.name = value }
            if let value = input.sharedSecrets { app.sharedSecrets = value }
            if let value = input.apiKeyId { app.apiKeyId = value }
            if let value = input.apiIssuerId { app.apiIssuerId = value }
            if let value = input.apiPrivateKey { app.apiPrivateKey = value }
            if let value = input.acceptSandbox { app.acceptSandbox = value }
            if let value = input.restorePolicy { app.restorePolicy = value }
            try self.validateAPIKey(app)
            try await self.store.save(app, on: db)
            return (app, before)
        }
        if app.sharedSecrets != before.sharedSecrets || app.apiKeyId != before.apiKeyId
            || app.apiIssuerId != before.apiIssuerId || app.apiPrivateKey != before.apiPrivateKey
        {
            // The settings Apple refused may be fixed now: confirmations that failed on them are tried again at
            // once, with the new settings (forget the old ones first), rather than after their back-off.
            catalogueChanged()
            let moved = try await store.bringForward(cause: .configuration, bundleId: bundleId, at: nowMilliseconds)
            if moved > 0 {
                logger.notice("\(bundleId)'s credentials changed: \(moved) confirmations they failed are due now")
                workAvailable.signal()
            }
        }
        return app
    }

    public func apps() async throws -> [ServerApp] { try await store.apps(on: store.sql) }

    public func app(bundleId: String) async throws -> ServerApp {
        try await requireApp(bundleId: bundleId, on: store.sql)
    }

    /// The app an app key belongs to.
    public func app(appKey: String) async throws -> ServerApp? {
        try await appsByKey.value(for: appKey) { try await store.app(appKey: appKey, on: store.sql) }
    }

    private func validateAPIKey(_ app: ServerApp) throws {
        guard let pem = app.apiPrivateKey else { return }
        guard (try? P256.Signing.PrivateKey(pemRepresentation: pem)) != nil, app.apiKeyId != nil, app.apiIssuerId != nil
        else {
            throw TillHTTPError.badRequest(
                "invalidAPIKey",
                "an App Store Server API key needs apiKeyId, apiIssuerId and a P-256 PEM private key"
            )
        }
    }

    /// Creates or replaces a product of the catalogue; `created` says which (the admin API answers 201 or 200).
    @discardableResult
    public func putProduct(bundleId: String, productId: String, _ input: CatalogProductInput) async throws
        -> (product: CatalogProduct, created: Bool)
    {
        defer { catalogueChanged() }
        guard !productId.isEmpty, productId.count <= 100 else {
            throw TillHTTPError.badRequest("invalidProductId", "a product id has 1 to 100 characters")
        }
        guard let type = input.type else {
            throw TillHTTPError.badRequest(
                "invalidProductType",
                "type is consumable, nonConsumable, autoRenewable, nonRenewing or freeSubscription"
            )
        }
        if type == .consumable, (input.credits ?? [:]).isEmpty, !(input.entitlements ?? []).isEmpty {
            throw TillHTTPError.badRequest(
                "consumableEntitlements",
                "consumables credit balances; they grant no entitlements"
            )
        }
        if type == .nonRenewing, (input.durationSeconds ?? 0) <= 0, !(input.entitlements ?? []).isEmpty {
            throw TillHTTPError.badRequest(
                "durationRequired",
                "a non-renewing subscription needs durationSeconds: the server sets its expiry"
            )
        }
        guard (input.credits ?? [:]).values.allSatisfy({ $0 > 0 }) else {
            throw TillHTTPError.badRequest("invalidCredits", "credits are positive")
        }
        let now = nowMilliseconds
        return try await database.transaction { db in
            _ = try await self.requireApp(bundleId: bundleId, on: db)
            let existing = try await self.store.product(bundleId: bundleId, productId: productId, on: db)
            let count = try await self.store.products(bundleId: bundleId, on: db).count
            let product = CatalogProduct(
                bundleId: bundleId,
                productId: productId,
                type: type,
                title: input.title ?? existing?.title ?? productId,
                entitlements: input.entitlements ?? [],
                credits: input.credits ?? [:],
                content: existing?.content ?? [],
                subscriptionGroup: input.subscriptionGroup,
                durationSeconds: input.durationSeconds,
                price: input.price,
                currency: input.currency,
                position: input.position ?? existing?.position ?? count,
                createdAt: existing?.createdAt ?? now,
                updatedAt: now
            )
            try await self.store.save(product, on: db)
            return (product, existing == nil)
        }
    }

    public func products(bundleId: String) async throws -> [CatalogProduct] {
        _ = try await requireApp(bundleId: bundleId, on: store.sql)
        return try await store.products(bundleId: bundleId, on: store.sql)
    }

    static func randomToken() -> String {
        (0..<24).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }
}
