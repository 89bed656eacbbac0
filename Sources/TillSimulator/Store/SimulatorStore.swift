import Foundation
import SQLKit
import TillCore
import TillStorage

/// The simulator's persistence: every read and write of its tables, on SQLite or PostgreSQL.
///
/// Methods take the `SQLDatabase` to run on, so that a service can group them in one transaction
/// (`database.transaction { db in … }`) or run them alone (`store.sql`).
struct SimulatorStore: Sendable {
    let database: TillDatabase
    var sql: any SQLDatabase { database.sql }

    static let encoding = ColumnNames.encoder
    static let decoding = ColumnNames.decoder

    func migrate() async throws {
        try await database.migrate(SimulatorSchema.migrations, schema: SimulatorSchema.name)
    }

    // MARK: Signing keys

    /// The signing key (PEM) and its certificate chain stored under `name`, if any.
    func signingKey(named name: String) async throws -> (keyPEM: String, chainPEM: String)? {
        guard
            let row = try await sql.raw("SELECT private_key_pem, chain_pem FROM sim_keys WHERE name = \(bind: name)")
                .first()
        else { return nil }
        return (
            try row.decode(column: "private_key_pem", as: String.self),
            try row.decode(column: "chain_pem", as: String.self)
        )
    }

    /// Stores a signing key under `name` unless one is stored already (another process may have been first).
    func storeSigningKey(named name: String, keyPEM: String, chainPEM: String, at: Int64) async throws {
        try await sql.raw(
            """
            INSERT INTO sim_keys (name, private_key_pem, chain_pem, created_at)
            VALUES (\(bind: name), \(bind: keyPEM), \(bind: chainPEM), \(bind: at))
            ON CONFLICT (name) DO NOTHING
            """
        ).run()
    }

    // MARK: Counters and settings

    /// The next value of a named counter (1, 2, 3, …), safe under concurrency.
    func next(_ name: String, startingAt start: Int64 = 1, on db: any SQLDatabase) async throws -> Int64 {
        let row = try await db.raw(
            """
            INSERT INTO sim_counters (name, value) VALUES (\(bind: name), \(bind: start))
            ON CONFLICT (name) DO UPDATE SET value = sim_counters.value + 1
            RETURNING value
            """
        ).first()
        return try row!.decode(column: "value", as: Int64.self)
    }

    func setting(_ name: String, on db: any SQLDatabase) async throws -> String? {
        try await db.raw("SELECT value FROM sim_settings WHERE name = \(bind: name)").first()?
            .decode(column: "value", as: String.self)
    }

    func setSetting(_ name: String, _ value: String, on db: any SQLDatabase) async throws {
        try await db.raw(
            """
            INSERT INTO sim_settings (name, value) VALUES (\(bind: name), \(bind: value))
            ON CONFLICT (name) DO UPDATE SET value = \(bind: value)
            """
        ).run()
    }

    // MARK: Apps and keys

    func insert(_ app: SimApp, on db: any SQLDatabase) async throws {
        try await db.insert(into: "sim_apps").model(app, with: Self.encoding).run()
    }

    func update(_ app: SimApp, on db: any SQLDatabase) async throws {
        try await db.update("sim_apps").set(model: app, with: Self.encoding).where(
            "app_apple_id",
            .equal,
            app.appAppleId
        ).run()
    }

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

    func insert(_ key: SimAPIKey, on db: any SQLDatabase) async throws {
        try await db.insert(into: "sim_api_keys").model(key, with: Self.encoding).run()
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

    func insert(_ account: SimAccount, on db: any SQLDatabase) async throws {
        try await db.insert(into: "sim_accounts").model(account, with: Self.encoding).run()
    }

    func update(_ account: SimAccount, on db: any SQLDatabase) async throws {
        try await db.update("sim_accounts").set(model: account, with: Self.encoding).where("id", .equal, account.id)
            .run()
    }

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

    func insert(_ device: SimDevice, on db: any SQLDatabase) async throws {
        try await db.insert(into: "sim_devices").model(device, with: Self.encoding).run()
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
