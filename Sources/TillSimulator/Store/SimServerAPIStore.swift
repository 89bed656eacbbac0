import Foundation
import SQLKit
import TillCore
import TillStorage

/// What the App Store Server API records (`ServerAPI`, `SubscriptionEngine`'s extensions): consumption information
/// and renewal-date extensions.
struct SimServerAPIStore: Sendable {
    private static let decoding = SimulatorStore.decoding

    // MARK: Consumption information

    func consumptionInfo(appAppleId: Int64, environment: AppStoreEnvironment, on db: any SQLDatabase) async throws
        -> [SimConsumptionInfo]
    {
        try await db.select().column("*").from("sim_consumption").where("app_apple_id", .equal, appAppleId)
            .where("environment", .equal, environment).orderBy("received_at").orderBy("id")
            .all(decoding: SimConsumptionInfo.self, with: Self.decoding)
    }

    // MARK: Renewal-date extensions

    /// The extension a request identifier already made for this subscription (requests are idempotent).
    func renewalExtension(
        requestIdentifier: String,
        originalTransactionId: String,
        appAppleId: Int64,
        environment: AppStoreEnvironment,
        on db: any SQLDatabase
    ) async throws -> SimRenewalExtension? {
        try await db.select().column("*").from("sim_extensions").where("app_apple_id", .equal, appAppleId)
            .where("environment", .equal, environment).where("request_identifier", .equal, requestIdentifier)
            .where("original_transaction_id", .equal, originalTransactionId)
            .first(decoding: SimRenewalExtension.self, with: Self.decoding)
    }

    /// How many times a subscription's renewal date was extended since `since`.
    func succeededExtensions(originalTransactionId: String, since: Int64, on db: any SQLDatabase) async throws -> Int {
        try await db.raw(
            """
            SELECT COUNT(*) AS n FROM sim_extensions
            WHERE original_transaction_id = \(bind: originalTransactionId) AND succeeded
              AND created_at >= \(bind: since)
            """
        ).first()?.decode(column: "n", as: Int.self) ?? 0
    }

    func massExtension(
        requestIdentifier: String,
        appAppleId: Int64,
        environment: AppStoreEnvironment,
        on db: any SQLDatabase
    )
        async throws -> SimMassExtension?
    {
        try await db.select().column("*").from("sim_mass_extensions").where("app_apple_id", .equal, appAppleId)
            .where("environment", .equal, environment).where("request_identifier", .equal, requestIdentifier)
            .first(decoding: SimMassExtension.self, with: Self.decoding)
    }

    func incompleteMassExtensions(on db: any SQLDatabase) async throws -> [SimMassExtension] {
        try await db.select().column("*").from("sim_mass_extensions").where("complete", .equal, false)
            .orderBy("created_at").all(decoding: SimMassExtension.self, with: Self.decoding)
    }

    /// The active subscriptions of a product that a mass extension has not reached yet, at most `limit`.
    func subscriptionsToExtend(
        _ request: SimMassExtension,
        limit: Int,
        on db: any SQLDatabase
    ) async throws -> [SimSubscription] {
        try await db.raw(
            """
            SELECT s.* FROM sim_subscriptions s
            WHERE s.app_apple_id = \(bind: request.appAppleId) AND s.environment = \(bind: request.environment)
              AND s.product_id = \(bind: request.productId) AND s.status IN (1, 3, 4)
              AND NOT EXISTS (
                SELECT 1 FROM sim_extensions e
                WHERE e.app_apple_id = s.app_apple_id AND e.environment = s.environment
                  AND e.request_identifier = \(bind: request.requestIdentifier)
                  AND e.original_transaction_id = s.original_transaction_id)
            ORDER BY s.original_transaction_id LIMIT \(literal: limit)
            """
        ).all(decoding: SimSubscription.self, with: Self.decoding)
    }
}
