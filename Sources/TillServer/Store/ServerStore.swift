import Foundation
import SQLKit
import TillContract
import TillCore
import TillStorage

/// What every store of the server shares: its database (SQLite or PostgreSQL), and how records map to columns.
protocol ServerSQLStore: Sendable {
    var database: TillDatabase { get }
}

extension ServerSQLStore {
    var sql: any SQLDatabase { database.sql }
    static var encoding: SQLQueryEncoder { ColumnNames.encoder }
    static var decoding: SQLRowDecoder { ColumnNames.decoder }
}

/// The verification server's persistence, on SQLite or PostgreSQL, but for the rooms that have their own store
/// (`JobStore`, `WebhookStore`).
struct ServerStore: ServerSQLStore {
    let database: TillDatabase

    func migrate() async throws {
        try await database.migrate(ServerSchema.migrations, schema: ServerSchema.name)
    }

    /// How much a database holds, for `till check`'s summary: ledger rows, customers with one, events.
    func counts() async throws -> (transactions: Int, customers: Int, events: Int) {
        let row = try await database.sql.raw(
            """
            SELECT (SELECT COUNT(*) FROM srv_transactions) AS transactions,
                   (SELECT COUNT(*) FROM (SELECT DISTINCT bundle_id, customer_id FROM srv_transactions) c) AS customers,
                   (SELECT COUNT(*) FROM srv_events) AS events
            """
        ).first()
        return (
            Int(try row?.decode(column: "transactions", as: Int64.self) ?? 0),
            Int(try row?.decode(column: "customers", as: Int64.self) ?? 0),
            Int(try row?.decode(column: "events", as: Int64.self) ?? 0)
        )
    }

    private static func json<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: (try? encoder.encode(value)) ?? Data("null".utf8), as: UTF8.self)
    }

    private static func decodeJSON<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(text.utf8))
    }

    // MARK: Settings

    /// A stored setting, or `make()` stored as it on first use (several processes agree on the first one stored).
    func setting(_ name: String, orStore make: () -> String) async throws -> String {
        try await sql.raw(
            "INSERT INTO srv_settings (name, value) VALUES (\(bind: name), \(bind: make())) ON CONFLICT (name) DO NOTHING"
        ).run()
        return try await sql.raw("SELECT value FROM srv_settings WHERE name = \(bind: name)").first()!
            .decode(column: "value", as: String.self)
    }

    // MARK: Apps

    private struct AppRow: Codable {
        var bundleId: String
        var appAppleId: Int64?
        var name: String
        var appKey: String
        var sharedSecrets: String
        var apiKeyId: String?
        var apiIssuerId: String?
        var apiPrivateKey: String?
        var inAppPurchaseKeyId: String?
        var inAppPurchaseIssuerId: String?
        var inAppPurchasePrivateKey: String?
        var acceptSandbox: Bool
        var restorePolicy: String
        var consumptionSampleContentProvided: Bool
        var consumptionRefundPreference: String?
        /// A JSON array of PEM certificates.
        var storeKitTestCertificates: String
        var createdAt: Int64
    }

    func save(_ app: ServerApp, on db: any SQLDatabase) async throws {
        let row = AppRow(
            bundleId: app.bundleId,
            appAppleId: app.appAppleId,
            name: app.name,
            appKey: app.appKey,
            sharedSecrets: Self.json(app.sharedSecrets),
            apiKeyId: app.apiKeyId,
            apiIssuerId: app.apiIssuerId,
            apiPrivateKey: app.apiPrivateKey,
            inAppPurchaseKeyId: app.inAppPurchaseKeyId,
            inAppPurchaseIssuerId: app.inAppPurchaseIssuerId,
            inAppPurchasePrivateKey: app.inAppPurchasePrivateKey,
            acceptSandbox: app.acceptSandbox,
            restorePolicy: app.restorePolicy.rawValue,
            consumptionSampleContentProvided: app.consumption.sampleContentProvided ?? false,
            consumptionRefundPreference: app.consumption.refundPreference?.rawValue,
            storeKitTestCertificates: Self.json(app.storeKitTestCertificates),
            createdAt: app.createdAt
        )
        try await db.insert(into: "srv_apps").model(row, with: Self.encoding)
            .onConflict(with: ["bundle_id"]) { try $0.set(excludedContentOf: row, with: Self.encoding) }.run()
    }

    func app(bundleId: String, on db: any SQLDatabase) async throws -> ServerApp? {
        try await db.select().column("*").from("srv_apps").where("bundle_id", .equal, bundleId)
            .first(decoding: AppRow.self, with: Self.decoding).map(Self.app)
    }

    func app(appKey: String, on db: any SQLDatabase) async throws -> ServerApp? {
        try await db.select().column("*").from("srv_apps").where("app_key", .equal, appKey)
            .first(decoding: AppRow.self, with: Self.decoding).map(Self.app)
    }

    func apps(on db: any SQLDatabase) async throws -> [ServerApp] {
        try await db.select().column("*").from("srv_apps").orderBy("created_at").all(
            decoding: AppRow.self,
            with: Self.decoding
        )
        .map(Self.app)
    }

    private static func app(_ row: AppRow) throws -> ServerApp {
        ServerApp(
            bundleId: row.bundleId,
            appAppleId: row.appAppleId,
            name: row.name,
            appKey: row.appKey,
            sharedSecrets: try decodeJSON([String].self, row.sharedSecrets),
            apiKeyId: row.apiKeyId,
            apiIssuerId: row.apiIssuerId,
            apiPrivateKey: row.apiPrivateKey,
            inAppPurchaseKeyId: row.inAppPurchaseKeyId,
            inAppPurchaseIssuerId: row.inAppPurchaseIssuerId,
            inAppPurchasePrivateKey: row.inAppPurchasePrivateKey,
            acceptSandbox: row.acceptSandbox,
            restorePolicy: RestorePolicy(rawValue: row.restorePolicy) ?? .keepWithFirstOwner,
            consumption: ConsumptionSettings(
                sampleContentProvided: row.consumptionSampleContentProvided,
                refundPreference: row.consumptionRefundPreference.flatMap(ConsumptionSettings.RefundPreference.init)
            ),
            storeKitTestCertificates: try decodeJSON([String].self, row.storeKitTestCertificates),
            createdAt: row.createdAt
        )
    }

    // MARK: Catalogue

    private struct ProductRow: Codable {
        var bundleId: String
        var productId: String
        var type: String
        var title: String
        var entitlements: String
        var credits: String
        var content: String
        var subscriptionGroup: String?
        var durationSeconds: Int64?
        var price: Int64?
        var currency: String?
        var position: Int
        var createdAt: Int64
        var updatedAt: Int64
    }

    func save(_ product: CatalogProduct, on db: any SQLDatabase) async throws {
        let row = ProductRow(
            bundleId: product.bundleId,
            productId: product.productId,
            type: product.type.rawValue,
            title: product.title,
            entitlements: Self.json(product.entitlements),
            credits: Self.json(product.credits),
            content: Self.json(product.content),
            subscriptionGroup: product.subscriptionGroup,
            durationSeconds: product.durationSeconds,
            price: product.price,
            currency: product.currency,
            position: product.position,
            createdAt: product.createdAt,
            updatedAt: product.updatedAt
        )
        try await db.insert(into: "srv_products").model(row, with: Self.encoding)
            .onConflict(with: ["bundle_id", "product_id"]) { try $0.set(excludedContentOf: row, with: Self.encoding) }
            .run()
    }

    func products(bundleId: String, on db: any SQLDatabase) async throws -> [CatalogProduct] {
        try await db.select().column("*").from("srv_products").where("bundle_id", .equal, bundleId).orderBy("position")
            .orderBy("product_id").all(decoding: ProductRow.self, with: Self.decoding).map(Self.product)
    }

    func product(bundleId: String, productId: String, on db: any SQLDatabase) async throws -> CatalogProduct? {
        try await db.select().column("*").from("srv_products").where("bundle_id", .equal, bundleId)
            .where("product_id", .equal, productId).first(decoding: ProductRow.self, with: Self.decoding).map(
                Self.product
            )
    }

    private static func product(_ row: ProductRow) throws -> CatalogProduct {
        CatalogProduct(
            bundleId: row.bundleId,
            productId: row.productId,
            type: ProductType(rawValue: row.type) ?? .consumable,
            title: row.title,
            entitlements: try decodeJSON([String].self, row.entitlements),
            credits: try decodeJSON([String: Int64].self, row.credits),
            content: try decodeJSON([ContentFile].self, row.content),
            subscriptionGroup: row.subscriptionGroup,
            durationSeconds: row.durationSeconds,
            price: row.price,
            currency: row.currency,
            position: row.position,
            createdAt: row.createdAt,
            updatedAt: row.updatedAt
        )
    }

    // MARK: Customers

    func ensureCustomer(bundleId: String, customerId: String, at: Int64, on db: any SQLDatabase) async throws {
        try await db.raw(
            """
            INSERT INTO srv_customers (bundle_id, customer_id, alias_of, created_at)
            VALUES (\(bind: bundleId), \(bind: customerId), NULL, \(bind: at)) ON CONFLICT (bundle_id, customer_id) DO NOTHING
            """
        ).run()
    }

    /// The account a customer id stands for, recording the id as a customer when it is new: one read for a known id
    /// (a purchase's usual case), where recording it every time and then resolving it took an insert and a read.
    func admit(bundleId: String, customerId: String, at: Int64, on db: any SQLDatabase) async throws -> String {
        let row = try await db.raw(
            "SELECT alias_of FROM srv_customers WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: customerId)"
        ).first()
        guard let row else {
            try await ensureCustomer(bundleId: bundleId, customerId: customerId, at: at, on: db)
            return customerId
        }
        guard let alias = try row.decode(column: "alias_of", as: String?.self) else { return customerId }
        return try await resolve(bundleId: bundleId, customerId: alias, on: db)
    }

    /// The account a customer id stands for (a guest linked to an account resolves to the account).
    func resolve(bundleId: String, customerId: String, on db: any SQLDatabase) async throws -> String {
        var current = customerId
        for _ in 0..<8 {
            let row = try await db.raw(
                "SELECT alias_of FROM srv_customers WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: current)"
            ).first()
            guard let alias = try row?.decode(column: "alias_of", as: String?.self) else { return current }
            current = alias
        }
        return current
    }

    /// The account a guest id is linked to; nil for an id that is no one's guest.
    func aliasOf(bundleId: String, customerId: String, on db: any SQLDatabase) async throws -> String? {
        try await db.raw(
            "SELECT alias_of FROM srv_customers WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: customerId)"
        ).first()?.decode(column: "alias_of", as: String?.self)
    }

    /// The guest ids linked to the account `customerId`, sorted.
    func guests(bundleId: String, customerId: String, on db: any SQLDatabase) async throws -> [String] {
        try await db.raw(
            """
            SELECT customer_id FROM srv_customers WHERE bundle_id = \(bind: bundleId) AND alias_of = \(bind: customerId)
            ORDER BY customer_id
            """
        ).all().map { try $0.decode(column: "customer_id", as: String.self) }
    }

    /// Whether any guest id is linked to `customerId` (which makes it an account).
    func hasGuests(bundleId: String, customerId: String, on db: any SQLDatabase) async throws -> Bool {
        try await db.raw(
            "SELECT customer_id FROM srv_customers WHERE bundle_id = \(bind: bundleId) AND alias_of = \(bind: customerId) LIMIT 1"
        ).first() != nil
    }
}
