import Foundation
import SQLKit
import TillStorage

extension ServerStore {
    // MARK: Notifications

    /// Records a notification once; returns false when its UUID is already there (a retried delivery).
    func insertOnce(_ notification: NotificationRecord, on db: any SQLDatabase) async throws -> Bool {
        let rows = try await db.insert(into: "srv_notifications").model(notification, with: Self.encoding)
            .ignoringConflicts(with: ["notification_uuid"]).returning("notification_uuid").all()
        return !rows.isEmpty
    }

    func notification(uuid: String, on db: any SQLDatabase) async throws -> NotificationRecord? {
        try await db.select().column("*").from("srv_notifications").where("notification_uuid", .equal, uuid)
            .first(decoding: NotificationRecord.self, with: Self.decoding)
    }

    // MARK: Subscription states

    /// Stores a subscription's state unless a newer one (by `signedDate`) is already there: notifications
    /// can arrive out of order, and older renewal info must not undo newer.
    func save(_ state: SubscriptionStateRecord, on db: any SQLDatabase) async throws {
        try await db.insert(into: "srv_subscription_states").model(state, with: Self.encoding)
            .onConflict(with: ["environment", "original_transaction_id"]) {
                try $0.set(excludedContentOf: state, with: Self.encoding)
                    .where(
                        SQLColumn("signed_date", table: "srv_subscription_states"),
                        .lessThanOrEqual,
                        SQLExcludedColumn("signed_date")
                    )
            }
            .run()
    }

    func subscriptionState(environment: String, originalTransactionId: String, on db: any SQLDatabase) async throws
        -> SubscriptionStateRecord?
    {
        try await db.select().column("*").from("srv_subscription_states").where("environment", .equal, environment)
            .where("original_transaction_id", .equal, originalTransactionId)
            .first(decoding: SubscriptionStateRecord.self, with: Self.decoding)
    }

    /// The states of an app's subscriptions with these original transaction ids (any environment).
    func subscriptionStates(bundleId: String, originalTransactionIds: [String], on db: any SQLDatabase) async throws
        -> [SubscriptionStateRecord]
    {
        guard !originalTransactionIds.isEmpty else { return [] }
        return try await db.select().column("*").from("srv_subscription_states").where("bundle_id", .equal, bundleId)
            .where("original_transaction_id", .in, originalTransactionIds)
            .all(decoding: SubscriptionStateRecord.self, with: Self.decoding)
    }
}
