import Foundation
import SQLKit
import TillContract
import TillCore
import TillStorage

/// Apple's notifications as received (`srv_notifications`), the lock on a purchase they and the ledger share, and
/// the subscriptions' renewal states.
package struct NotificationStore: ServerSQLStore {
    package let database: TillDatabase

    // MARK: Notifications

    /// Records a notification once; returns false when its UUID is already there (a retried delivery).
    package func insertOnce(_ notification: NotificationRecord, on db: any SQLDatabase) async throws -> Bool {
        let rows = try await db.insert(into: "srv_notifications").model(notification, with: Self.encoding)
            .ignoringConflicts(with: ["notification_uuid"]).returning("notification_uuid").all()
        return !rows.isEmpty
    }

    package func notification(uuid: String, on db: any SQLDatabase) async throws -> NotificationRecord? {
        try await db.select().column("*").from("srv_notifications").where("notification_uuid", .equal, uuid)
            .first(decoding: NotificationRecord.self, with: Self.decoding)
    }

    /// Notifications about a subscription (or purchase) that no customer owned when they came, oldest first. The
    /// outcome is written into the statement: a bound one cannot tell the planner that the partial index of unmatched
    /// notifications serves it (every purchase read the whole table).
    package func unmatchedNotifications(
        environment: AppStoreEnvironment,
        originalTransactionId: String,
        on db: any SQLDatabase
    )
        async throws -> [NotificationRecord]
    {
        try await db.all(Self.unmatched(environment, originalTransactionId)).map {
            try $0.decode(model: NotificationRecord.self, with: Self.decoding)
        }
    }

    private static let unmatched = FixedStatement(
        """
        SELECT * FROM srv_notifications
        WHERE outcome = '\(NotificationOutcome.unmatched.rawValue)' AND environment = ?1
          AND original_transaction_id = ?2
        ORDER BY signed_date, received_at
        """
    )

    package func update(_ notification: NotificationRecord, on db: any SQLDatabase) async throws {
        try await db.update("srv_notifications").set(model: notification, with: Self.encoding)
            .where("notification_uuid", .equal, notification.notificationUuid).run()
    }

    /// Serialises, until the end of `db`'s transaction, the work of every process on one subscription (or one-off
    /// purchase): a notification about it and a submission recording it must each see the other's result. On
    /// PostgreSQL an advisory lock; SQLite has one writer already.
    package func lockPurchase(environment: AppStoreEnvironment, originalTransactionId: String, on db: any SQLDatabase)
        async throws
    {
        guard database.engine == .postgres else { return }
        try await db.run(Self.lockPurchase(environment.rawValue + ":" + originalTransactionId))
    }

    private static let lockPurchase = FixedStatement("SELECT pg_advisory_xact_lock(hashtextextended(?1, 0))")

    // MARK: Subscription states

    package func subscriptionState(
        environment: AppStoreEnvironment,
        originalTransactionId: String,
        on db: any SQLDatabase
    )
        async throws
        -> SubscriptionStateRecord?
    {
        try await db.select().column("*").from("srv_subscription_states").where("environment", .equal, environment)
            .where("original_transaction_id", .equal, originalTransactionId)
            .first(decoding: SubscriptionStateRecord.self, with: Self.decoding)
    }

    /// The states of an app's subscriptions with these original transaction ids (any environment). The environments
    /// are named so that the key (environment, original transaction id) finds them: without them the table is read.
    package func subscriptionStates(bundleId: String, originalTransactionIds: [String], on db: any SQLDatabase)
        async throws
        -> [SubscriptionStateRecord]
    {
        guard !originalTransactionIds.isEmpty else { return [] }
        return try await db.select().column("*").from("srv_subscription_states")
            .where("environment", .in, AppStoreEnvironment.known.map(\.rawValue))
            .where("original_transaction_id", .in, originalTransactionIds).where("bundle_id", .equal, bundleId)
            .all(decoding: SubscriptionStateRecord.self, with: Self.decoding)
    }

    package init(
        database: TillDatabase
    ) {
        self.database = database
    }

    /// An app's notifications, newest first (by `received_at`, then UUID), before `before`, at most `limit`; of one
    /// outcome or type, or all.
    package func notifications(
        bundleId: String,
        outcome: NotificationOutcome?,
        type: String?,
        before: PageKey?,
        limit: Int,
        on db: any SQLDatabase
    ) async throws -> [NotificationRecord] {
        var query = db.select().column("*").from("srv_notifications").where("bundle_id", .equal, bundleId)
        if let outcome { query = query.where("outcome", .equal, outcome.rawValue) }
        if let type { query = query.where("type", .equal, type) }
        if let before {
            query = query.where { group in
                group.where("received_at", .lessThan, before.number).orWhere { inner in
                    inner.where("received_at", .equal, before.number)
                        .where("notification_uuid", .lessThan, before.text)
                }
            }
        }
        return try await query.orderBy("received_at", .descending).orderBy("notification_uuid", .descending)
            .limit(limit).all(decoding: NotificationRecord.self, with: Self.decoding)
    }
}
