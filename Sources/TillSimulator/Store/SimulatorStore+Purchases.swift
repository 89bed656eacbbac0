import Foundation
import SQLKit
import TillCore
import TillStorage

extension SimulatorStore {
    // MARK: Payments

    func insert(_ payment: SimPayment, on db: any SQLDatabase) async throws {
        try await db.insert(into: "sim_payments").model(payment, with: Self.encoding).run()
    }

    func update(_ payment: SimPayment, on db: any SQLDatabase) async throws {
        try await db.update("sim_payments").set(model: payment, with: Self.encoding).where("id", .equal, payment.id)
            .run()
    }

    func payment(id: String, on db: any SQLDatabase) async throws -> SimPayment? {
        try await db.select().column("*").from("sim_payments").where("id", .equal, id)
            .first(decoding: SimPayment.self, with: Self.decoding)
    }

    func payments(state: String, on db: any SQLDatabase) async throws -> [SimPayment] {
        try await db.select().column("*").from("sim_payments").where("state", .equal, state).orderBy("created_at")
            .all(decoding: SimPayment.self, with: Self.decoding)
    }

    // MARK: Transactions

    func insert(_ transaction: SimTransaction, on db: any SQLDatabase) async throws {
        try await db.insert(into: "sim_transactions").model(transaction, with: Self.encoding).run()
    }

    func update(_ transaction: SimTransaction, on db: any SQLDatabase) async throws {
        try await db.update("sim_transactions").set(model: transaction, with: Self.encoding)
            .where("transaction_id", .equal, transaction.transactionId).run()
    }

    func transaction(id: String, on db: any SQLDatabase) async throws -> SimTransaction? {
        try await db.select().column("*").from("sim_transactions").where("transaction_id", .equal, id)
            .first(decoding: SimTransaction.self, with: Self.decoding)
    }

    /// Every transaction of an account for an app in an environment, oldest first.
    func transactions(accountId: String, appAppleId: Int64, environment: String, on db: any SQLDatabase) async throws
        -> [SimTransaction]
    {
        // Written as SQL, as the other reads verifyReceipt makes: sql-kit's builders serialised each time cost
        // more than running them (perf, docs/benchmarks.md).
        try await db.raw(
            """
            SELECT * FROM sim_transactions
            WHERE account_id = \(bind: accountId) AND app_apple_id = \(bind: appAppleId) AND environment = \(bind: environment)
            ORDER BY purchase_date, signed_sequence
            """
        ).all(decoding: SimTransaction.self, with: Self.decoding)
    }

    func transactions(originalTransactionId: String, on db: any SQLDatabase) async throws -> [SimTransaction] {
        try await db.select().column("*").from("sim_transactions").where(
            "original_transaction_id",
            .equal,
            originalTransactionId
        )
        .orderBy("purchase_date").orderBy("signed_sequence").all(decoding: SimTransaction.self, with: Self.decoding)
    }

    func transactions(orderId: String, on db: any SQLDatabase) async throws -> [SimTransaction] {
        try await db.select().column("*").from("sim_transactions").where("order_id", .equal, orderId)
            .orderBy("purchase_date").all(decoding: SimTransaction.self, with: Self.decoding)
    }

    // MARK: Queue

    func insert(_ entry: SimQueueEntry, on db: any SQLDatabase) async throws {
        try await db.insert(into: "sim_queue").model(entry, with: Self.encoding).run()
    }

    func update(_ entry: SimQueueEntry, on db: any SQLDatabase) async throws {
        try await db.update("sim_queue").set(model: entry, with: Self.encoding).where("id", .equal, entry.id).run()
    }

    func queueEntry(id: String, on db: any SQLDatabase) async throws -> SimQueueEntry? {
        try await db.select().column("*").from("sim_queue").where("id", .equal, id)
            .first(decoding: SimQueueEntry.self, with: Self.decoding)
    }

    func unfinishedQueue(deviceId: String, appAppleId: Int64, on db: any SQLDatabase) async throws -> [SimQueueEntry] {
        try await db.select().column("*").from("sim_queue").where("device_id", .equal, deviceId)
            .where("app_apple_id", .equal, appAppleId).where("finished", .equal, false).orderBy("seq")
            .all(decoding: SimQueueEntry.self, with: Self.decoding)
    }

    func queueEntries(paymentId: String, on db: any SQLDatabase) async throws -> [SimQueueEntry] {
        try await db.select().column("*").from("sim_queue").where("payment_id", .equal, paymentId)
            .all(decoding: SimQueueEntry.self, with: Self.decoding)
    }

    // MARK: Subscriptions

    func upsert(_ subscription: SimSubscription, on db: any SQLDatabase) async throws {
        try await db.delete(from: "sim_subscriptions").where(
            "original_transaction_id",
            .equal,
            subscription.originalTransactionId
        ).run()
        try await db.insert(into: "sim_subscriptions").model(subscription, with: Self.encoding).run()
    }

    func subscription(originalTransactionId: String, on db: any SQLDatabase) async throws -> SimSubscription? {
        try await db.select().column("*").from("sim_subscriptions").where(
            "original_transaction_id",
            .equal,
            originalTransactionId
        )
        .first(decoding: SimSubscription.self, with: Self.decoding)
    }

    func subscription(accountId: String, appAppleId: Int64, environment: String, group: String, on db: any SQLDatabase)
        async throws -> SimSubscription?
    {
        try await db.select().column("*").from("sim_subscriptions").where("account_id", .equal, accountId)
            .where("app_apple_id", .equal, appAppleId).where("environment", .equal, environment)
            .where("subscription_group", .equal, group).first(decoding: SimSubscription.self, with: Self.decoding)
    }

    func subscriptions(accountId: String, appAppleId: Int64, environment: String, on db: any SQLDatabase) async throws
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

    // MARK: Receipts

    func recordReceipt(
        opaqueValue: String,
        accountId: String,
        deviceId: String,
        appAppleId: Int64,
        environment: String,
        at: Int64,
        on db: any SQLDatabase
    ) async throws {
        try await db.raw(
            """
            INSERT INTO sim_receipts (opaque_value, account_id, device_id, app_apple_id, environment, created_at)
            VALUES (\(bind: opaqueValue), \(bind: accountId), \(bind: deviceId), \(bind: appAppleId), \(bind: environment), \(bind: at))
            ON CONFLICT (opaque_value) DO NOTHING
            """
        ).run()
    }

    struct ReceiptOwner: Codable {
        var accountId: String
        var deviceId: String
        var appAppleId: Int64
        var environment: String
    }

    func receiptOwner(opaqueValue: String, on db: any SQLDatabase) async throws -> ReceiptOwner? {
        try await db.raw(
            """
            SELECT account_id, device_id, app_apple_id, environment FROM sim_receipts
            WHERE opaque_value = \(bind: opaqueValue)
            """
        ).first(decoding: ReceiptOwner.self, with: Self.decoding)
    }

    // MARK: Notifications

    func insert(_ notification: SimNotificationRecord, on db: any SQLDatabase) async throws {
        try await db.insert(into: "sim_notifications").model(notification, with: Self.encoding).run()
    }

    func update(_ notification: SimNotificationRecord, on db: any SQLDatabase) async throws {
        try await db.update("sim_notifications").set(model: notification, with: Self.encoding)
            .where("uuid", .equal, notification.uuid).run()
    }

    func dueNotifications(now: Int64, limit: Int, on db: any SQLDatabase) async throws -> [SimNotificationRecord] {
        try await db.select().column("*").from("sim_notifications").where("state", .equal, "pending")
            .where("next_attempt_at", .lessThanOrEqual, now).orderBy("next_attempt_at").limit(limit)
            .all(decoding: SimNotificationRecord.self, with: Self.decoding)
    }

    func notification(testToken: String, on db: any SQLDatabase) async throws -> SimNotificationRecord? {
        try await db.select().column("*").from("sim_notifications").where("test_token", .equal, testToken)
            .first(decoding: SimNotificationRecord.self, with: Self.decoding)
    }

    func notifications(appAppleId: Int64, environment: String, from: Int64, to: Int64, on db: any SQLDatabase)
        async throws
        -> [SimNotificationRecord]
    {
        try await db.select().column("*").from("sim_notifications").where("app_apple_id", .equal, appAppleId)
            .where("environment", .equal, environment).where("created_at", .greaterThanOrEqual, from)
            .where("created_at", .lessThan, to).orderBy("created_at").orderBy("uuid")
            .all(decoding: SimNotificationRecord.self, with: Self.decoding)
    }
}
