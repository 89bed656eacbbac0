import Foundation
import SQLKit
import TillContract
import TillCore
import TillStorage

/// Every statement that writes money, credits or access: ledger rows, balance entries, the books, the renewal state
/// that grants a grace period, the environment a submission's purchases are in, and which account a guest id is.
///
/// Only `Ledger` holds one (`LayoutTests.onlyTheLedgerWritesMoneyCreditsAndAccess` fails on a write to these tables
/// anywhere else, and on a mention of this type outside `Ledger/` and `Store/`): whoever learns of a change tells the
/// ledger, which decides what it does and writes the event that says so in the same transaction.
struct LedgerStore: Sendable {
    let database: TillDatabase

    private static var encoding: SQLQueryEncoder { ServerStore.encoding }

    // MARK: Transactions

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

    /// Moves a submission's transactions and their money to `environment` (an iOS 6-style receipt claims its
    /// environment without signing it: Apple's answer decides).
    func moveEnvironment(
        submissionId: String,
        from: AppStoreEnvironment,
        to environment: AppStoreEnvironment,
        on db: any SQLDatabase
    ) async throws {
        try await db.raw(
            """
            UPDATE srv_finance SET environment = \(bind: environment.rawValue)
            WHERE environment = \(bind: from.rawValue) AND transaction_id IN (
                SELECT transaction_id FROM srv_transactions
                WHERE submission_id = \(bind: submissionId) AND environment = \(bind: from.rawValue))
            """
        ).run()
        try await db.raw(
            """
            UPDATE srv_transactions SET environment = \(bind: environment.rawValue)
            WHERE submission_id = \(bind: submissionId) AND environment = \(bind: from.rawValue)
            """
        ).run()
    }

    /// Moves every purchase of `from` to `to` (linking a guest to an account); answers the transaction ids moved.
    func moveTransactions(bundleId: String, from: String, to: String, on db: any SQLDatabase) async throws -> [String] {
        try await db.raw(
            """
            UPDATE srv_transactions SET customer_id = \(bind: to)
            WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: from)
            RETURNING transaction_id
            """
        ).all().map { try $0.decode(column: "transaction_id", as: String.self) }.sorted()
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

    /// Moves every balance entry of `from` to `to` (linking a guest to an account).
    func moveBalances(bundleId: String, from: String, to: String, on db: any SQLDatabase) async throws {
        try await db.raw(
            """
            UPDATE srv_balance_entries SET customer_id = \(bind: to)
            WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: from)
            """
        ).run()
    }

    // MARK: The books

    func recordFinance(
        of row: LedgerRecord,
        amount: Int64,
        currency: String,
        at: Int64,
        kind: FinanceKind,
        on db: any SQLDatabase
    ) async throws {
        try await db.raw(
            """
            INSERT INTO srv_finance (environment, transaction_id, bundle_id, product_id, amount, currency, occurred_at, kind)
            VALUES (\(bind: row.environment.rawValue), \(bind: row.transactionId), \(bind: row.bundleId),
                    \(bind: row.productId), \(bind: amount), \(bind: currency), \(bind: at), \(bind: kind.rawValue))
            ON CONFLICT (environment, transaction_id, kind) DO NOTHING
            """
        ).run()
    }

    // MARK: Renewal state

    /// Stores a subscription's state unless a newer one (by `signedDate`) is already there: notifications
    /// can arrive out of order, and older renewal info must not undo newer. Answers whether it was stored.
    func save(_ state: SubscriptionStateRecord, on db: any SQLDatabase) async throws -> Bool {
        try await !db.insert(into: "srv_subscription_states").model(state, with: Self.encoding)
            .onConflict(with: ["environment", "original_transaction_id"]) {
                try $0.set(excludedContentOf: state, with: Self.encoding)
                    .where(
                        SQLColumn("signed_date", table: "srv_subscription_states"),
                        .lessThanOrEqual,
                        SQLExcludedColumn("signed_date")
                    )
            }
            .returning("original_transaction_id").all().isEmpty
    }

    // MARK: Aliases

    /// Makes `customerId` a guest of the account `aliasOf`: what is submitted under it counts for the account.
    func setAlias(bundleId: String, customerId: String, aliasOf: String, on db: any SQLDatabase) async throws {
        try await db.raw(
            """
            UPDATE srv_customers SET alias_of = \(bind: aliasOf)
            WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: customerId)
            """
        ).run()
    }
}
