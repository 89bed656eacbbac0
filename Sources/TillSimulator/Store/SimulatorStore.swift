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
        try await db.select().column("*").from("sim_apps").where("bundle_id", .equal, bundleId)
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
            createdAt: product.createdAt
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
            createdAt: row.createdAt
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
        try await db.select().column("*").from("sim_accounts").where("id", .equal, id)
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
        try await db.select().column("*").from("sim_devices").where("id", .equal, id)
            .first(decoding: SimDevice.self, with: Self.decoding)
    }

    func devices(accountId: String, on db: any SQLDatabase) async throws -> [SimDevice] {
        try await db.select().column("*").from("sim_devices").where("account_id", .equal, accountId).orderBy(
            "created_at"
        )
        .all(decoding: SimDevice.self, with: Self.decoding)
    }

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
        try await db.select().column("*").from("sim_transactions").where("account_id", .equal, accountId)
            .where("app_apple_id", .equal, appAppleId).where("environment", .equal, environment)
            .orderBy("purchase_date").orderBy("signed_sequence").all(decoding: SimTransaction.self, with: Self.decoding)
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
        try await db.select().column("*").from("sim_subscriptions").where("account_id", .equal, accountId)
            .where("app_apple_id", .equal, appAppleId).where("environment", .equal, environment)
            .orderBy("subscription_group").all(decoding: SimSubscription.self, with: Self.decoding)
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
        try await db.select().columns("account_id", "device_id", "app_apple_id", "environment").from("sim_receipts")
            .where("opaque_value", .equal, opaqueValue).first(decoding: ReceiptOwner.self, with: Self.decoding)
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
