import Foundation
import SQLKit
import TillCore
import TillStorage

/// App Store Connect's records (`AppStoreConnect`, and the lookups every room makes): apps, their API keys, products
/// with their prices and review state, sandbox accounts and their devices.
struct SimAppStoreConnectStore: Sendable {
    private static let encoding = SimulatorStore.encoding
    private static let decoding = SimulatorStore.decoding

    // MARK: Apps and keys

    func app(appAppleId: Int64, on db: any SQLDatabase) async throws -> SimApp? {
        try await db.select().column("*").from("sim_apps").where("app_apple_id", .equal, appAppleId)
            .first(decoding: SimApp.self, with: Self.decoding)
    }

    func app(bundleId: String, on db: any SQLDatabase) async throws -> SimApp? {
        try await db.raw("SELECT * FROM sim_apps WHERE bundle_id = \(bind: bundleId)")
            .first(decoding: SimApp.self, with: Self.decoding)
    }

    func apps(on db: any SQLDatabase) async throws -> [SimApp] {
        try await db.select().column("*").from("sim_apps").orderBy("created_at").all(
            decoding: SimApp.self,
            with: Self.decoding
        )
    }

    func apiKey(id: String, on db: any SQLDatabase) async throws -> SimAPIKey? {
        try await db.select().column("*").from("sim_api_keys").where("key_id", .equal, id)
            .first(decoding: SimAPIKey.self, with: Self.decoding)
    }

    // MARK: Products

    private struct ProductRow: Codable {
        var appAppleId: Int64
        var productId: String
        var type: String
        var referenceName: String
        var reviewState: String
        var subscriptionGroup: String?
        var subscriptionPeriod: String?
        var groupLevel: Int
        var familyShareable: Bool
        var prices: String
        var localizations: String
        var createdAt: Int64
        var monthlyCommitmentPrices: String?
    }

    func upsert(_ product: SimProduct, on db: any SQLDatabase) async throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let row = ProductRow(
            appAppleId: product.appAppleId,
            productId: product.productId,
            type: product.type.rawValue,
            referenceName: product.referenceName,
            reviewState: product.reviewState.rawValue,
            subscriptionGroup: product.subscriptionGroup,
            subscriptionPeriod: product.subscriptionPeriod?.rawValue,
            groupLevel: product.groupLevel,
            familyShareable: product.familyShareable,
            prices: String(decoding: try encoder.encode(product.prices), as: UTF8.self),
            localizations: String(decoding: try encoder.encode(product.localizations), as: UTF8.self),
            createdAt: product.createdAt,
            monthlyCommitmentPrices: try product.monthlyCommitmentPrices.map {
                String(decoding: try encoder.encode($0), as: UTF8.self)
            }
        )
        try await db.delete(from: "sim_products").where("app_apple_id", .equal, product.appAppleId)
            .where("product_id", .equal, product.productId).run()
        try await db.insert(into: "sim_products").model(row, with: Self.encoding).run()
    }

    func products(appAppleId: Int64, on db: any SQLDatabase) async throws -> [SimProduct] {
        try await db.select().column("*").from("sim_products").where("app_apple_id", .equal, appAppleId)
            .orderBy("created_at").orderBy("product_id").all(decoding: ProductRow.self, with: Self.decoding).map(
                Self.product
            )
    }

    func product(appAppleId: Int64, productId: String, on db: any SQLDatabase) async throws -> SimProduct? {
        try await db.select().column("*").from("sim_products").where("app_apple_id", .equal, appAppleId)
            .where("product_id", .equal, productId).first(decoding: ProductRow.self, with: Self.decoding).map(
                Self.product
            )
    }

    private static func product(_ row: ProductRow) throws -> SimProduct {
        let decoder = JSONDecoder()
        return SimProduct(
            appAppleId: row.appAppleId,
            productId: row.productId,
            type: ProductType(rawValue: row.type) ?? .consumable,
            referenceName: row.referenceName,
            reviewState: ReviewState(rawValue: row.reviewState) ?? .readyForSale,
            subscriptionGroup: row.subscriptionGroup,
            subscriptionPeriod: row.subscriptionPeriod.flatMap(SubscriptionPeriod.init),
            groupLevel: row.groupLevel,
            familyShareable: row.familyShareable,
            prices: try decoder.decode([String: StorefrontPrice].self, from: Data(row.prices.utf8)),
            localizations: try decoder.decode([String: Localization].self, from: Data(row.localizations.utf8)),
            createdAt: row.createdAt,
            monthlyCommitmentPrices: try row.monthlyCommitmentPrices.map {
                try decoder.decode([String: StorefrontPrice].self, from: Data($0.utf8))
            }
        )
    }

    // MARK: Accounts and devices

    func account(id: String, on db: any SQLDatabase) async throws -> SimAccount? {
        try await db.raw("SELECT * FROM sim_accounts WHERE id = \(bind: id)")
            .first(decoding: SimAccount.self, with: Self.decoding)
    }

    func accounts(on db: any SQLDatabase) async throws -> [SimAccount] {
        try await db.select().column("*").from("sim_accounts").orderBy("created_at").all(
            decoding: SimAccount.self,
            with: Self.decoding
        )
    }

    func accounts(familyId: String, on db: any SQLDatabase) async throws -> [SimAccount] {
        try await db.select().column("*").from("sim_accounts").where("family_id", .equal, familyId)
            .all(decoding: SimAccount.self, with: Self.decoding)
    }

    func device(id: String, on db: any SQLDatabase) async throws -> SimDevice? {
        try await db.raw("SELECT * FROM sim_devices WHERE id = \(bind: id)")
            .first(decoding: SimDevice.self, with: Self.decoding)
    }

    func devices(accountId: String, on db: any SQLDatabase) async throws -> [SimDevice] {
        try await db.select().column("*").from("sim_devices").where("account_id", .equal, accountId).orderBy(
            "created_at"
        )
        .all(decoding: SimDevice.self, with: Self.decoding)
    }
}
