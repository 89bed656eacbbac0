import Foundation
import SQLKit
import TillContract
import TillCore
import TillStorage

// What the ledger holds, read. Everything that writes it is `LedgerStore`, which only the ledger holds
// (`LayoutTests.onlyTheLedgerWritesMoneyCreditsAndAccess`).
extension ServerStore {
    // MARK: Ledger

    /// `FOR UPDATE` on PostgreSQL: the ledger's rows are read, changed and written back whole, so a reader inside a
    /// transaction holds the rows it read until it commits, and a concurrent change (a link moving them to an
    /// account, a notification) waits for it rather than being overwritten with what it read before. SQLite has a
    /// single writer already.
    private var forUpdate: SQLQueryString { database.engine == .postgres ? " FOR UPDATE" : "" }

    func transaction(environment: AppStoreEnvironment, transactionId: String, on db: any SQLDatabase) async throws
        -> LedgerRecord?
    {
        try await db.raw(
            """
            SELECT * FROM srv_transactions WHERE environment = \(bind: environment.rawValue)
            AND transaction_id = \(bind: transactionId)\(forUpdate)
            """
        ).first(decoding: LedgerRecord.self, with: Self.decoding)
    }

    /// A customer's transaction with this id, in any environment (the operator names one by its id).
    func transactions(bundleId: String, customerId: String, transactionId: String, on db: any SQLDatabase)
        async throws -> [LedgerRecord]
    {
        try await db.raw(
            """
            SELECT * FROM srv_transactions WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: customerId)
            AND transaction_id = \(bind: transactionId)\(forUpdate)
            """
        ).all(decoding: LedgerRecord.self, with: Self.decoding)
    }

    func transactions(bundleId: String, customerId: String, on db: any SQLDatabase) async throws -> [LedgerRecord] {
        try await db.raw(
            """
            SELECT * FROM srv_transactions WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: customerId)
            ORDER BY purchase_date
            """
        ).all(decoding: LedgerRecord.self, with: Self.decoding)
    }

    func transactions(submissionId: String, on db: any SQLDatabase) async throws -> [LedgerRecord] {
        try await db.raw(
            "SELECT * FROM srv_transactions WHERE submission_id = \(bind: submissionId)\(forUpdate)"
        ).all(decoding: LedgerRecord.self, with: Self.decoding)
    }

    func transactions(environment: AppStoreEnvironment, originalTransactionId: String, on db: any SQLDatabase)
        async throws -> [LedgerRecord]
    {
        // SQLite's planner, without statistics, prefers the primary key's `environment` (every transaction of the
        // environment) to this index: a read per purchase that grew with the ledger.
        let index: SQLQueryString = database.engine == .sqlite ? " INDEXED BY srv_transactions_original" : ""
        return try await db.raw(
            """
            SELECT * FROM srv_transactions\(index) WHERE environment = \(bind: environment.rawValue)
            AND original_transaction_id = \(bind: originalTransactionId) ORDER BY purchase_date\(forUpdate)
            """
        ).all(decoding: LedgerRecord.self, with: Self.decoding)
    }

    // MARK: Balances

    func balances(bundleId: String, customerId: String, on db: any SQLDatabase) async throws -> [String: Int64] {
        let rows = try await db.raw(
            """
            SELECT credit, CAST(SUM(delta) AS BIGINT) AS total FROM srv_balance_entries
            WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: customerId) GROUP BY credit
            """
        ).all()
        var result: [String: Int64] = [:]
        for row in rows {
            result[try row.decode(column: "credit", as: String.self)] = try row.decode(column: "total", as: Int64.self)
        }
        return result
    }

    /// The balance entries written under `reference` (a debit's has one credit; a purchase's one per credit).
    func balanceEntries(bundleId: String, reference: String, on db: any SQLDatabase) async throws
        -> [(customerId: String, credit: String, delta: Int64)]
    {
        try await db.raw(
            """
            SELECT customer_id, credit, delta FROM srv_balance_entries
            WHERE bundle_id = \(bind: bundleId) AND reference = \(bind: reference) ORDER BY credit
            """
        ).all().map {
            (
                try $0.decode(column: "customer_id", as: String.self), try $0.decode(column: "credit", as: String.self),
                try $0.decode(column: "delta", as: Int64.self)
            )
        }
    }

    // MARK: Finance

    /// The money booked for a transaction under `kind`, if any.
    func financeEntry(
        environment: AppStoreEnvironment,
        transactionId: String,
        kind: FinanceKind,
        on db: any SQLDatabase
    ) async throws -> (amount: Int64, currency: String)? {
        guard
            let row = try await db.raw(
                """
                SELECT amount, currency FROM srv_finance WHERE environment = \(bind: environment.rawValue)
                AND transaction_id = \(bind: transactionId) AND kind = \(bind: kind.rawValue)
                """
            ).first()
        else { return nil }
        return (try row.decode(column: "amount", as: Int64.self), try row.decode(column: "currency", as: String.self))
    }
}
