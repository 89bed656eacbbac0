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

    private static var encoding: SQLQueryEncoder { ColumnNames.encoder }

    // MARK: Transactions

    // Each write of a ledger row or of the books notes in the change set what it did to the figures (`FigureChange`,
    // the journal `Figures` folds): the figures follow the ledger exactly, whoever changed it.

    func insert(_ record: LedgerRecord, in changes: ChangeSet) async throws {
        try await changes.db.run(
            RecordStatements.insert(into: "srv_transactions", columns: LedgerRecord.columns, rows: [record.values])
        )
        changes.journal(FigureChange.periods(of: record, sign: 1))
    }

    /// Writes a row read before; its key, environment, purchase date and product stay as they were.
    func update(_ record: LedgerRecord, in changes: ChangeSet) async throws {
        try await changes.db.run(
            RecordStatements.update(
                "srv_transactions",
                columns: LedgerRecord.columns,
                values: record.values,
                keys: ["environment", "transaction_id"]
            )
        )
        changes.journal(FigureChange.periods(of: record, sign: 1).filter { $0.measure == .subscription })
    }

    /// Moves a submission's transactions and their money to `environment` (an iOS 6-style receipt claims its
    /// environment without signing it: Apple's answer decides).
    func moveEnvironment(
        submissionId: String,
        from: AppStoreEnvironment,
        to environment: AppStoreEnvironment,
        in changes: ChangeSet
    ) async throws {
        let money = try await changes.db.raw(
            """
            UPDATE srv_finance SET environment = \(bind: environment.rawValue)
            WHERE environment = \(bind: from.rawValue) AND transaction_id IN (
                SELECT transaction_id FROM srv_transactions
                WHERE submission_id = \(bind: submissionId) AND environment = \(bind: from.rawValue))
            RETURNING bundle_id, product_id, amount, currency, occurred_at, kind
            """
        ).all(decoding: MovedMoney.self, with: ColumnNames.decoder)
        let rows = try await changes.db.raw(
            """
            UPDATE srv_transactions SET environment = \(bind: environment.rawValue)
            WHERE submission_id = \(bind: submissionId) AND environment = \(bind: from.rawValue)
            RETURNING *
            """
        ).all(decoding: LedgerRecord.self, with: ColumnNames.decoder)
        for entry in money {
            for (place, sign) in [(from, Int64(-1)), (environment, 1)] {
                changes.journal([
                    .money(
                        bundleId: entry.bundleId,
                        environment: place,
                        kind: entry.kind,
                        productId: entry.productId,
                        currency: entry.currency,
                        amount: sign * entry.amount,
                        at: entry.occurredAt,
                        entries: sign
                    )
                ])
            }
        }
        for row in rows {
            var before = row
            before.environment = from
            changes.journal(FigureChange.periods(of: before, sign: -1) + FigureChange.periods(of: row, sign: 1))
        }
    }

    /// A row of the books as `moveEnvironment` moved it.
    private struct MovedMoney: Decodable {
        var bundleId: String
        var productId: String
        var amount: Int64
        var currency: String
        var occurredAt: Int64
        var kind: FinanceKind
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

    /// Adds a balance entry once per (reference, credit), and its delta to the credit's total (`srv_balances`, which
    /// a read takes instead of summing the entries); returns false when it was already there.
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
        let rows = try await db.all(Self.insertBalanceEntry(bundleId, customerId, credit, delta, reference, at))
        guard !rows.isEmpty else { return false }
        try await db.run(Self.addToBalance(bundleId, customerId, credit, delta))
        return true
    }

    private static let insertBalanceEntry = FixedStatement(
        """
        INSERT INTO srv_balance_entries (bundle_id, customer_id, credit, delta, reference, created_at)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6)
        ON CONFLICT (bundle_id, reference, credit) DO NOTHING RETURNING reference
        """
    )
    private static let addToBalance = FixedStatement(
        """
        INSERT INTO srv_balances (bundle_id, customer_id, credit, balance)
        VALUES (?1, ?2, ?3, ?4)
        ON CONFLICT (bundle_id, customer_id, credit) DO UPDATE SET balance = srv_balances.balance + excluded.balance
        """
    )

    /// Moves every balance entry of `from` to `to` (linking a guest to an account), and adds `from`'s totals to `to`'s.
    func moveBalances(bundleId: String, from: String, to: String, on db: any SQLDatabase) async throws {
        try await db.raw(
            """
            UPDATE srv_balance_entries SET customer_id = \(bind: to)
            WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: from)
            """
        ).run()
        // `WHERE true`: SQLite's upsert after a SELECT needs a WHERE to tell its ON CONFLICT from a join's ON.
        try await db.raw(
            """
            INSERT INTO srv_balances (bundle_id, customer_id, credit, balance)
            SELECT bundle_id, \(bind: to), credit, balance FROM srv_balances
            WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: from) AND true
            ON CONFLICT (bundle_id, customer_id, credit) DO UPDATE SET balance = srv_balances.balance + excluded.balance
            """
        ).run()
        try await db.raw(
            """
            DELETE FROM srv_balances WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: from)
            """
        ).run()
    }

    /// Every credit's total made again from its entries (after a bulk load wrote entries without them).
    func rebuildBalances(on db: any SQLDatabase) async throws {
        try await db.raw("DELETE FROM srv_balances").run()
        try await db.raw(
            """
            INSERT INTO srv_balances (bundle_id, customer_id, credit, balance)
            SELECT bundle_id, customer_id, credit, CAST(SUM(delta) AS BIGINT) FROM srv_balance_entries
            GROUP BY bundle_id, customer_id, credit
            """
        ).run()
    }

    /// Where the balances and the ledger disagree, read only (`LedgerAudit`): a total that is not the sum of its
    /// entries, an entry a total lacks, and a purchase's credits whose transaction is not in the ledger.
    static func disagreements(on db: any SQLDatabase) async throws -> [String] {
        var found: [String] = []
        let totals = try await db.raw(
            """
            SELECT b.bundle_id AS bundle_id, b.customer_id AS customer_id, b.credit AS credit, b.balance AS balance,
                   CAST(COALESCE(SUM(e.delta), 0) AS BIGINT) AS entries
            FROM srv_balances b LEFT JOIN srv_balance_entries e
              ON e.bundle_id = b.bundle_id AND e.customer_id = b.customer_id AND e.credit = b.credit
            GROUP BY b.bundle_id, b.customer_id, b.credit, b.balance
            HAVING b.balance <> CAST(COALESCE(SUM(e.delta), 0) AS BIGINT)
            """
        ).all()
        for row in totals {
            found.append(
                "the balance of \(try row.decode(column: "credit", as: String.self)) of "
                    + "\(try row.decode(column: "customer_id", as: String.self)) "
                    + "(\(try row.decode(column: "bundle_id", as: String.self))) is "
                    + "\(try row.decode(column: "balance", as: Int64.self)); its entries sum to "
                    + "\(try row.decode(column: "entries", as: Int64.self))"
            )
        }
        let untotalled = try await db.raw(
            """
            SELECT e.bundle_id AS bundle_id, e.customer_id AS customer_id, e.credit AS credit
            FROM srv_balance_entries e LEFT JOIN srv_balances b
              ON b.bundle_id = e.bundle_id AND b.customer_id = e.customer_id AND b.credit = e.credit
            WHERE b.bundle_id IS NULL
            GROUP BY e.bundle_id, e.customer_id, e.credit
            """
        ).all()
        for row in untotalled {
            found.append(
                "\(try row.decode(column: "customer_id", as: String.self)) has entries of "
                    + "\(try row.decode(column: "credit", as: String.self)) but no balance"
            )
        }
        // A purchase's entry is `purchase:<environment>:<transaction id>`.
        let entries = try await db.raw(
            "SELECT reference FROM srv_balance_entries WHERE reference LIKE 'purchase:%'"
        ).all().map { try $0.decode(column: "reference", as: String.self) }
        for reference in entries {
            let parts = reference.split(separator: ":", maxSplits: 2).map(String.init)
            guard parts.count == 3 else {
                found.append("a purchase's credits have a reference Till does not write: \(reference)")
                continue
            }
            let exists = try await db.raw(
                """
                SELECT 1 AS found FROM srv_transactions
                WHERE environment = \(bind: parts[1]) AND transaction_id = \(bind: parts[2])
                """
            ).first()
            if exists == nil {
                found.append("credits for transaction \(parts[2]) (\(parts[1])), which the ledger lacks")
            }
        }
        return found
    }

    // MARK: The books

    func recordFinance(
        of row: LedgerRecord,
        amount: Int64,
        currency: String,
        at: Int64,
        kind: FinanceKind,
        in changes: ChangeSet
    ) async throws {
        let booked = try await changes.db.all(
            Self.insertFinance(
                row.environment.rawValue,
                row.transactionId,
                row.bundleId,
                row.productId,
                amount,
                currency,
                at,
                kind.rawValue
            )
        )
        guard !booked.isEmpty else { return }
        changes.journal([
            .money(
                bundleId: row.bundleId,
                environment: row.environment,
                kind: kind,
                productId: row.productId,
                currency: currency,
                amount: amount,
                at: at
            )
        ])
    }

    private static let insertFinance = FixedStatement(
        """
        INSERT INTO srv_finance (environment, transaction_id, bundle_id, product_id, amount, currency, occurred_at, kind)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
        ON CONFLICT (environment, transaction_id, kind) DO NOTHING RETURNING kind
        """
    )

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

    /// Makes `customerId` a guest of the account `aliasOf`: what is submitted under it counts for the account. The
    /// account's `created_at` moves back to the guest's when the guest was recorded first: it is when the server first
    /// saw the customer (the customer answer's `firstSeen`), read with the alias and kept by no one else.
    func setAlias(bundleId: String, customerId: String, aliasOf: String, on db: any SQLDatabase) async throws {
        try await db.raw(
            """
            UPDATE srv_customers SET alias_of = \(bind: aliasOf)
            WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: customerId)
            """
        ).run()
        try await db.raw(
            """
            UPDATE srv_customers SET created_at = guest.created_at
            FROM srv_customers AS guest
            WHERE srv_customers.bundle_id = \(bind: bundleId) AND srv_customers.customer_id = \(bind: aliasOf)
              AND guest.bundle_id = \(bind: bundleId) AND guest.customer_id = \(bind: customerId)
              AND guest.created_at < srv_customers.created_at
            """
        ).run()
    }
}
