import Foundation
import SQLKit
import TillCatalogue
import TillLedger
import TillStorage

/// The customers' AppTransactions (`AppTransactions`; migration 021-app-transactions): one row per customer.
struct AppTransactionStore: ServerSQLStore {
    let database: TillDatabase

    /// A customer's AppTransaction (the id as stored: an account, aliases resolved by the caller); `locking`: held
    /// until the end of `db`'s transaction (PostgreSQL: `FOR UPDATE`; SQLite has one writer already).
    func appTransaction(bundleId: String, customerId: String, locking: Bool = false, on db: any SQLDatabase)
        async throws -> AppTransactionRecord?
    {
        let lock: SQLQueryString = locking && database.engine == .postgres ? " FOR UPDATE" : ""
        return try await db.raw(
            """
            SELECT * FROM srv_app_transactions
            WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: customerId)\(lock)
            """
        ).first(decoding: AppTransactionRecord.self, with: Self.decoding)
    }

    /// Stores `record` unless the customer has one already (which stays as it is).
    func insertAppTransactionIfAbsent(_ record: AppTransactionRecord, on db: any SQLDatabase) async throws {
        try await db.insert(into: "srv_app_transactions").model(record, with: Self.encoding)
            .ignoringConflicts(with: ["bundle_id", "customer_id"]).run()
    }

    /// Puts `record` in the place of the customer's AppTransaction.
    func replaceAppTransaction(_ record: AppTransactionRecord, on db: any SQLDatabase) async throws {
        try await db.run(
            RecordStatements.update(
                "srv_app_transactions",
                record,
                keys: ["bundle_id", "customer_id"],
                with: Self.encoding
            )
        )
    }
}
