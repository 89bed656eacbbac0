import Foundation
import SQLKit
import TillCore
import TillStorage

/// StoreKit on a device (`Payments`), and what the App Store knows of it (`Receipts`, `ServerAPI`): payments, the
/// transactions they made, each device's queue, and the receipts handed out.
struct SimPurchaseStore: Sendable {
    private static let decoding = SimulatorStore.decoding

    // MARK: Payments

    func payment(id: String, on db: any SQLDatabase) async throws -> SimPayment? {
        try await db.select().column("*").from("sim_payments").where("id", .equal, id)
            .first(decoding: SimPayment.self, with: Self.decoding)
    }

    // MARK: Transactions

    func transaction(id: String, on db: any SQLDatabase) async throws -> SimTransaction? {
        try await db.select().column("*").from("sim_transactions").where("transaction_id", .equal, id)
            .first(decoding: SimTransaction.self, with: Self.decoding)
    }

    /// Every transaction of an account for an app in an environment, oldest first.
    func transactions(accountId: String, appAppleId: Int64, environment: AppStoreEnvironment, on db: any SQLDatabase)
        async throws
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

    /// Marks every queue entry of a transaction finished (Finish Transaction, from the server).
    func finishQueueEntries(transactionId: String, on db: any SQLDatabase) async throws {
        try await db.update("sim_queue").set("finished", to: true).where("transaction_id", .equal, transactionId)
            .where("restored_transaction_id", .is, SQLLiteral.null).run()
    }

    /// The accounts that have a transaction of an app in an environment.
    func customers(appAppleId: Int64, environment: AppStoreEnvironment, on db: any SQLDatabase) async throws -> [String]
    {
        try await db.raw(
            """
            SELECT DISTINCT account_id FROM sim_transactions
            WHERE app_apple_id = \(bind: appAppleId) AND environment = \(bind: environment)
            ORDER BY account_id
            """
        ).all().map { try $0.decode(column: "account_id", as: String.self) }
    }

    // MARK: Receipts

    func recordReceipt(
        opaqueValue: String,
        accountId: String,
        deviceId: String,
        appAppleId: Int64,
        environment: AppStoreEnvironment,
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
        var environment: AppStoreEnvironment
    }

    func receiptOwner(opaqueValue: String, on db: any SQLDatabase) async throws -> ReceiptOwner? {
        try await db.raw(
            """
            SELECT account_id, device_id, app_apple_id, environment FROM sim_receipts
            WHERE opaque_value = \(bind: opaqueValue)
            """
        ).first(decoding: ReceiptOwner.self, with: Self.decoding)
    }
}
