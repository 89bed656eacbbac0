import Foundation
import SQLKit
import TillContract
import TillCore
import TillStorage

extension ServerStore {
    // MARK: Ledger

    /// `FOR UPDATE` on PostgreSQL: the ledger's rows are read, changed and written back whole, so a reader inside a
    /// transaction holds the rows it read until it commits, and a concurrent change (a link moving them to an
    /// account, a notification) waits for it rather than being overwritten with what it read before. SQLite has a
    /// single writer already.
    private var forUpdate: SQLQueryString { database.engine == .postgres ? " FOR UPDATE" : "" }

    func transaction(environment: String, transactionId: String, on db: any SQLDatabase) async throws -> LedgerRecord? {
        try await db.raw(
            "SELECT * FROM srv_transactions WHERE environment = \(bind: environment) AND transaction_id = \(bind: transactionId)\(forUpdate)"
        ).first(decoding: LedgerRecord.self, with: Self.decoding)
    }

    func insert(_ record: LedgerRecord, on db: any SQLDatabase) async throws {
        try await db.run(RecordStatements.insert(into: "srv_transactions", record, with: Self.encoding))
    }

    func update(_ record: LedgerRecord, on db: any SQLDatabase) async throws {
        try await db.run(
            RecordStatements.update(
                "srv_transactions",
                record,
                keys: ["environment", "transaction_id"],
                with: Self.encoding
            )
        )
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

    func transactions(environment: String, originalTransactionId: String, on db: any SQLDatabase) async throws
        -> [LedgerRecord]
    {
        try await db.raw(
            """
            SELECT * FROM srv_transactions WHERE environment = \(bind: environment)
            AND original_transaction_id = \(bind: originalTransactionId) ORDER BY purchase_date\(forUpdate)
            """
        ).all(decoding: LedgerRecord.self, with: Self.decoding)
    }

    // MARK: Balances

    /// Adds a balance entry once per (reference, credit); returns false when it was already there.
    @discardableResult
    func addBalanceEntry(
        bundleId: String,
        customerId: String,
        credit: String,
        delta: Int64,
        reference: String,
        at: Int64,
        on db: any SQLDatabase
    ) async throws -> Bool {
        let rows = try await db.raw(
            """
            INSERT INTO srv_balance_entries (bundle_id, customer_id, credit, delta, reference, created_at)
            VALUES (\(bind: bundleId), \(bind: customerId), \(bind: credit), \(bind: delta), \(bind: reference), \(bind: at))
            ON CONFLICT (bundle_id, reference, credit) DO NOTHING RETURNING reference
            """
        ).all()
        return !rows.isEmpty
    }

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

    /// Moves every balance entry of `from` to `to` (linking a guest to an account).
    func moveBalances(bundleId: String, from: String, to: String, on db: any SQLDatabase) async throws {
        try await db.raw(
            "UPDATE srv_balance_entries SET customer_id = \(bind: to) WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: from)"
        ).run()
    }

    func moveTransactions(bundleId: String, from: String, to: String, on db: any SQLDatabase) async throws {
        try await db.raw(
            "UPDATE srv_transactions SET customer_id = \(bind: to) WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: from)"
        ).run()
    }

    // MARK: Finance and events

    func recordFinance(
        environment: String,
        transactionId: String,
        bundleId: String,
        productId: String,
        amount: Int64,
        currency: String,
        at: Int64,
        kind: String,
        on db: any SQLDatabase
    ) async throws {
        try await db.raw(
            """
            INSERT INTO srv_finance (environment, transaction_id, bundle_id, product_id, amount, currency, occurred_at, kind)
            VALUES (\(bind: environment), \(bind: transactionId), \(bind: bundleId), \(bind: productId), \(bind: amount),
                    \(bind: currency), \(bind: at), \(bind: kind))
            ON CONFLICT (environment, transaction_id, kind) DO NOTHING
            """
        ).run()
    }

    /// The money booked for a transaction under `kind` (`purchase`, `refund`, `revocation`, …), if any.
    func financeEntry(environment: String, transactionId: String, kind: String, on db: any SQLDatabase) async throws
        -> (amount: Int64, currency: String)?
    {
        guard
            let row = try await db.raw(
                """
                SELECT amount, currency FROM srv_finance WHERE environment = \(bind: environment)
                AND transaction_id = \(bind: transactionId) AND kind = \(bind: kind)
                """
            ).first()
        else { return nil }
        return (try row.decode(column: "amount", as: Int64.self), try row.decode(column: "currency", as: String.self))
    }

    /// Books the opposite of `row`'s finance entry of `kind` as an entry of `reversal` (a refund reversed, a
    /// revocation lifted), once; nothing when there is no such entry or it is zero.
    func reverseFinance(of row: LedgerRecord, kind: String, as reversal: String, at: Int64, on db: any SQLDatabase)
        async throws
    {
        guard
            let booked = try await financeEntry(
                environment: row.environment,
                transactionId: row.transactionId,
                kind: kind,
                on: db
            ), booked.amount != 0
        else { return }
        try await recordFinance(
            environment: row.environment,
            transactionId: row.transactionId,
            bundleId: row.bundleId,
            productId: row.productId,
            amount: -booked.amount,
            currency: booked.currency,
            at: at,
            kind: reversal,
            on: db
        )
    }

    func recordEvent(bundleId: String, kind: String, detail: String, at: Int64, on db: any SQLDatabase) async throws {
        try await db.raw(
            """
            INSERT INTO srv_events (id, bundle_id, kind, detail, created_at)
            VALUES (\(bind: UUID.random().uuidString.lowercased()), \(bind: bundleId), \(bind: kind), \(bind: detail), \(bind: at))
            """
        ).run()
    }
}
