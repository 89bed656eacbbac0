import Foundation
import SQLKit
import TillCore
import TillFormats
import TillStorage

/// Retention Messaging (`RetentionMessaging`): images, messages, default messages, the realtime URL, its calls and
/// performance tests.
struct SimRetentionStore: Sendable {
    private static let decoding = SimulatorStore.decoding

    // MARK: Images and messages

    /// An app's image or message in an environment, by its identifier.
    func retentionAsset<Asset: RetentionAsset>(
        _ kind: Asset.Type,
        _ id: String,
        appAppleId: Int64,
        environment: AppStoreEnvironment,
        on db: any SQLDatabase
    ) async throws -> Asset? {
        try await db.select().column("*").from(Asset.table).where("app_apple_id", .equal, appAppleId)
            .where("environment", .equal, environment).where(SQLIdentifier(Asset.identifierColumn), .equal, id)
            .first(decoding: Asset.self, with: Self.decoding)
    }

    /// An app's images or messages in an environment, oldest first.
    func retentionAssets<Asset: RetentionAsset>(
        _ kind: Asset.Type,
        appAppleId: Int64,
        environment: AppStoreEnvironment,
        on db: any SQLDatabase
    ) async throws -> [Asset] {
        try await db.select().column("*").from(Asset.table).where("app_apple_id", .equal, appAppleId)
            .where("environment", .equal, environment).orderBy("created_at")
            .orderBy(SQLIdentifier(Asset.identifierColumn))
            .all(decoding: Asset.self, with: Self.decoding)
    }

    func deleteRetentionAsset<Asset: RetentionAsset>(
        _ kind: Asset.Type,
        _ id: String,
        appAppleId: Int64,
        environment: AppStoreEnvironment,
        on db: any SQLDatabase
    ) async throws {
        try await db.delete(from: Asset.table).where("app_apple_id", .equal, appAppleId)
            .where("environment", .equal, environment).where(SQLIdentifier(Asset.identifierColumn), .equal, id).run()
    }

    /// Sets an image's or a message's review state.
    func setRetentionAssetState<Asset: RetentionAsset>(
        _ kind: Asset.Type,
        _ id: String,
        appAppleId: Int64,
        environment: AppStoreEnvironment,
        state: RetentionReviewState,
        on db: any SQLDatabase
    ) async throws {
        try await db.update(Asset.table).set("state", to: state.rawValue).where("app_apple_id", .equal, appAppleId)
            .where("environment", .equal, environment).where(SQLIdentifier(Asset.identifierColumn), .equal, id).run()
    }

    // MARK: Default messages

    func retentionDefault(
        productId: String,
        locale: String,
        appAppleId: Int64,
        environment: AppStoreEnvironment,
        on db: any SQLDatabase
    ) async throws -> SimRetentionDefault? {
        try await db.select().column("*").from("sim_retention_defaults").where("app_apple_id", .equal, appAppleId)
            .where("environment", .equal, environment).where("product_id", .equal, productId)
            .where("locale", .equal, locale).first(decoding: SimRetentionDefault.self, with: Self.decoding)
    }

    func retentionDefaults(appAppleId: Int64, environment: AppStoreEnvironment, on db: any SQLDatabase) async throws
        -> [SimRetentionDefault]
    {
        try await db.select().column("*").from("sim_retention_defaults").where("app_apple_id", .equal, appAppleId)
            .where("environment", .equal, environment).orderBy("product_id").orderBy("locale")
            .all(decoding: SimRetentionDefault.self, with: Self.decoding)
    }

    func deleteRetentionDefault(
        productId: String,
        locale: String,
        appAppleId: Int64,
        environment: AppStoreEnvironment,
        on db: any SQLDatabase
    ) async throws {
        try await db.delete(from: "sim_retention_defaults").where("app_apple_id", .equal, appAppleId)
            .where("environment", .equal, environment).where("product_id", .equal, productId)
            .where("locale", .equal, locale).run()
    }

    // MARK: Realtime URL

    private struct RealtimeURLRow: Codable { var realtimeUrl: String? }

    func realtimeURL(appAppleId: Int64, environment: AppStoreEnvironment, on db: any SQLDatabase) async throws
        -> String?
    {
        try await db.select().column("realtime_url").from("sim_retention_settings")
            .where("app_apple_id", .equal, appAppleId).where("environment", .equal, environment)
            .first(decoding: RealtimeURLRow.self, with: Self.decoding)?.realtimeUrl
    }

    func setRealtimeURL(
        _ url: String?,
        appAppleId: Int64,
        environment: AppStoreEnvironment,
        at: Int64,
        on db: any SQLDatabase
    )
        async throws
    {
        try await db.raw(
            """
            INSERT INTO sim_retention_settings (app_apple_id, environment, realtime_url, updated_at)
            VALUES (\(bind: appAppleId), \(bind: environment), \(bind: url), \(bind: at))
            ON CONFLICT (app_apple_id, environment) DO UPDATE SET realtime_url = \(bind: url), updated_at = \(bind: at)
            """
        ).run()
    }

    // MARK: Realtime requests and performance tests

    func retentionRequests(appAppleId: Int64, environment: AppStoreEnvironment, on db: any SQLDatabase) async throws
        -> [SimRetentionRequest]
    {
        try await db.select().column("*").from("sim_retention_requests").where("app_apple_id", .equal, appAppleId)
            .where("environment", .equal, environment).where("performance_test_id", .is, SQLLiteral.null)
            .orderBy("created_at").all(decoding: SimRetentionRequest.self, with: Self.decoding)
    }

    func retentionRequests(performanceTestId: String, on db: any SQLDatabase) async throws -> [SimRetentionRequest] {
        try await db.select().column("*").from("sim_retention_requests")
            .where("performance_test_id", .equal, performanceTestId).orderBy("created_at")
            .all(decoding: SimRetentionRequest.self, with: Self.decoding)
    }

    func performanceTest(requestId: String, on db: any SQLDatabase) async throws -> SimPerformanceTest? {
        try await db.select().column("*").from("sim_performance_tests").where("request_id", .equal, requestId)
            .first(decoding: SimPerformanceTest.self, with: Self.decoding)
    }

    func performanceTests(appAppleId: Int64, environment: AppStoreEnvironment, on db: any SQLDatabase) async throws
        -> [SimPerformanceTest]
    {
        try await db.select().column("*").from("sim_performance_tests").where("app_apple_id", .equal, appAppleId)
            .where("environment", .equal, environment).orderBy("created_at")
            .all(decoding: SimPerformanceTest.self, with: Self.decoding)
    }
}
