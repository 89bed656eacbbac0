import Foundation
import SQLKit
import TillCore
import TillStorage

/// Auto-renewable subscriptions, one row each (`SubscriptionEngine`, and every room that reads a subscriber's state).
struct SimSubscriptionStore: Sendable {
    private static let decoding = SimulatorStore.decoding

    func subscription(originalTransactionId: String, on db: any SQLDatabase) async throws -> SimSubscription? {
        try await db.select().column("*").from("sim_subscriptions").where(
            "original_transaction_id",
            .equal,
            originalTransactionId
        )
        .first(decoding: SimSubscription.self, with: Self.decoding)
    }

    func subscription(
        accountId: String,
        appAppleId: Int64,
        environment: AppStoreEnvironment,
        group: String,
        on db: any SQLDatabase
    )
        async throws -> SimSubscription?
    {
        try await db.select().column("*").from("sim_subscriptions").where("account_id", .equal, accountId)
            .where("app_apple_id", .equal, appAppleId).where("environment", .equal, environment)
            .where("subscription_group", .equal, group).first(decoding: SimSubscription.self, with: Self.decoding)
    }

    func subscriptions(accountId: String, appAppleId: Int64, environment: AppStoreEnvironment, on db: any SQLDatabase)
        async throws
        -> [SimSubscription]
    {
        try await db.raw(
            """
            SELECT * FROM sim_subscriptions
            WHERE account_id = \(bind: accountId) AND app_apple_id = \(bind: appAppleId) AND environment = \(bind: environment)
            ORDER BY subscription_group
            """
        ).all(decoding: SimSubscription.self, with: Self.decoding)
    }

    func subscriptions(appAppleId: Int64, productId: String, on db: any SQLDatabase) async throws -> [SimSubscription] {
        try await db.select().column("*").from("sim_subscriptions").where("app_apple_id", .equal, appAppleId)
            .where("auto_renew_product_id", .equal, productId).orderBy("original_transaction_id")
            .all(decoding: SimSubscription.self, with: Self.decoding)
    }

    /// Subscriptions the engine must look at: those whose period has ended by `now`, and every one in the grace
    /// period or in billing retry (the store retries the charge, which may now go through, and ends those periods).
    func dueSubscriptions(now: Int64, limit: Int, on db: any SQLDatabase) async throws -> [SimSubscription] {
        try await db.raw(
            """
            SELECT * FROM sim_subscriptions
            WHERE (status = 1 AND expires_date <= \(bind: now))
               OR (status = 4)
               OR (status = 3)
            ORDER BY expires_date LIMIT \(literal: limit)
            """
        ).all(decoding: SimSubscription.self, with: Self.decoding)
    }
}
