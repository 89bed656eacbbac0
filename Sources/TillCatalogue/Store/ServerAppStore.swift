import Foundation
import SQLKit
import TillContract
import TillCore
import TillLedger
import TillStorage

/// The apps Till serves (`srv_apps`): their keys, secrets and settings.
package struct ServerAppStore: ServerSQLStore {
    package let database: TillDatabase

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

    package func save(_ app: ServerApp, on db: any SQLDatabase) async throws {
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

    package func app(bundleId: String, on db: any SQLDatabase) async throws -> ServerApp? {
        try await db.select().column("*").from("srv_apps").where("bundle_id", .equal, bundleId)
            .first(decoding: AppRow.self, with: Self.decoding).map(Self.app)
    }

    package func app(appKey: String, on db: any SQLDatabase) async throws -> ServerApp? {
        try await db.select().column("*").from("srv_apps").where("app_key", .equal, appKey)
            .first(decoding: AppRow.self, with: Self.decoding).map(Self.app)
    }

    package func apps(on db: any SQLDatabase) async throws -> [ServerApp] {
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

    package init(
        database: TillDatabase
    ) {
        self.database = database
    }
}
