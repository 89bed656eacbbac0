import Foundation
import SQLKit
import TillCore
import TillStorage

/// App Store Server Notifications as `NotificationSender` keeps them: each one, its delivery, and the admin API's log.
struct SimNotificationStore: Sendable {
    private static let decoding = SimulatorStore.decoding

    func dueNotifications(now: Int64, limit: Int, on db: any SQLDatabase) async throws -> [SimNotificationRecord] {
        let pending = NotificationLogEntry.State.pending.rawValue
        return try await db.select().column("*").from("sim_notifications").where("state", .equal, pending)
            .where("next_attempt_at", .lessThanOrEqual, now).orderBy("next_attempt_at").limit(limit)
            .all(decoding: SimNotificationRecord.self, with: Self.decoding)
    }

    func notification(testToken: String, on db: any SQLDatabase) async throws -> SimNotificationRecord? {
        try await db.select().column("*").from("sim_notifications").where("test_token", .equal, testToken)
            .first(decoding: SimNotificationRecord.self, with: Self.decoding)
    }

    func notifications(
        appAppleId: Int64,
        environment: AppStoreEnvironment,
        from: Int64,
        to: Int64,
        on db: any SQLDatabase
    )
        async throws
        -> [SimNotificationRecord]
    {
        try await db.select().column("*").from("sim_notifications").where("app_apple_id", .equal, appAppleId)
            .where("environment", .equal, environment).where("created_at", .greaterThanOrEqual, from)
            .where("created_at", .lessThan, to).orderBy("created_at").orderBy("uuid")
            .all(decoding: SimNotificationRecord.self, with: Self.decoding)
    }

    /// The newest notification of a type about a transaction.
    func latestNotification(type: String, transactionId: String, on db: any SQLDatabase) async throws
        -> SimNotificationRecord?
    {
        try await db.select().column("*").from("sim_notifications").where("notification_type", .equal, type)
            .where("transaction_id", .equal, transactionId).orderBy("created_at", .descending).limit(1)
            .first(decoding: SimNotificationRecord.self, with: Self.decoding)
    }
}
