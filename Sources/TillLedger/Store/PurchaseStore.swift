import Foundation
import SQLKit
import TillContract
import TillCore
import TillStorage

/// What the ledger holds, read: transactions, balances, the books. Everything that writes it is `LedgerStore`,
/// which only the ledger holds (`LayoutTests.onlyTheLedgerWritesMoneyCreditsAndAccess`).
package struct PurchaseStore: ServerSQLStore {
    package let database: TillDatabase

    // MARK: Ledger

    /// `FOR UPDATE` on PostgreSQL: the ledger's rows are read, changed and written back whole, so a reader inside a
    /// transaction holds the rows it read until it commits, and a concurrent change (a link moving them to an
    /// account, a notification) waits for it rather than being overwritten with what it read before. SQLite has a
    /// single writer already.
    private var forUpdate: SQLQueryString { database.engine == .postgres ? " FOR UPDATE" : "" }

    /// `locking: false` reads the row without holding it, for a reader that only asks whose it is (`Ledger.owner`): it
    /// holds the owner's customer first (`CustomerStore.owner`), then reads the row again to change it, in the order a
    /// link takes them (customers, then their rows). Held here first, the row and a link's customer waited for each
    /// other until PostgreSQL broke the deadlock a second later.
    package func transaction(
        environment: AppStoreEnvironment,
        transactionId: String,
        locking: Bool = true,
        on db: any SQLDatabase
    ) async throws -> LedgerRecord? {
        let statement = locking ? Self.transaction : Self.transactionRead
        return try await db.first(statement(environment.rawValue, transactionId)).map(LedgerRecord.init(row:))
    }

    private static let byId = "SELECT * FROM srv_transactions WHERE environment = ?1 AND transaction_id = ?2"
    private static let transaction = FixedStatement(sqlite: byId, postgres: byId + " FOR UPDATE")
    private static let transactionRead = FixedStatement(byId)

    /// A customer's transaction with this id, in any environment (the operator names one by its id).
    package func transactions(bundleId: String, customerId: String, transactionId: String, on db: any SQLDatabase)
        async throws -> [LedgerRecord]
    {
        try await db.raw(
            """
            SELECT * FROM srv_transactions WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: customerId)
            AND transaction_id = \(bind: transactionId)\(forUpdate)
            """
        ).ledgerRows()
    }

    /// What a customer's view, snapshot and events are made of: every purchase of theirs that is not a consumable (or
    /// has no known type), and their latest `CustomerSnapshot.recentConsumables` consumable purchases; oldest first.
    ///
    /// A consumable grants credits, which the balances count, and no access: reading every one of them made a
    /// purchase by a customer with 10,000 consumables cost ten times one by a new customer (`till bench submissions
    /// --history`). The customer index is ordered by product type, so each part is a range of it: three parts, each an
    /// equality on the type (with `product_type IS NULL OR product_type IN (…)` SQLite walked the customer's every
    /// row and looked each up, 24 ms a purchase for a customer with 10,000).
    package func holdings(bundleId: String, customerId: String, on db: any SQLDatabase) async throws -> [LedgerRecord] {
        // Put in order here, not by the statement: SQLite's ORDER BY over the union copied every row, all its
        // columns, into a sorter and out again (1,158 of SQLite's steps for eleven rows; 759 without).
        try await db.all(Self.holdings.with([bundleId, customerId] + Self.grantingTypes + Self.consumableTypes))
            .map(LedgerRecord.init(row:)).sorted { $0.purchaseDate < $1.purchaseDate }
    }

    /// The product types that may grant access, and those that only credit (the rows `holdings` reads in full, and
    /// those it reads the latest of).
    private static let grantingTypes = ProductType.allCases.filter { !$0.isCreditedPerPurchase }.map(\.rawValue)
    private static let consumableTypes = ProductType.allCases.filter(\.isCreditedPerPurchase).map(\.rawValue)

    private static let holdings: FixedStatement = {
        let granting = (0..<grantingTypes.count).map { "?\($0 + 3)" }.joined(separator: ", ")
        let consumable = (0..<consumableTypes.count).map { "?\($0 + 3 + grantingTypes.count)" }.joined(separator: ", ")
        return FixedStatement(
            """
            SELECT * FROM srv_transactions WHERE bundle_id = ?1 AND customer_id = ?2
              AND product_type IN (\(granting))
            UNION ALL
            SELECT * FROM srv_transactions WHERE bundle_id = ?1 AND customer_id = ?2
              AND product_type IS NULL
            UNION ALL
            SELECT * FROM (SELECT * FROM srv_transactions WHERE bundle_id = ?1
              AND customer_id = ?2 AND product_type IN (\(consumable))
              ORDER BY purchase_date DESC LIMIT \(CustomerSnapshot.recentConsumables)) AS recent
            """
        )
    }()

    /// Every purchase of a customer, oldest first (the console's list; a purchase reads `holdings`).
    package func transactions(bundleId: String, customerId: String, on db: any SQLDatabase) async throws
        -> [LedgerRecord]
    {
        try await db.raw(
            """
            SELECT * FROM srv_transactions WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: customerId)
            ORDER BY purchase_date
            """
        ).ledgerRows()
    }

    package func transactions(submissionId: String, on db: any SQLDatabase) async throws -> [LedgerRecord] {
        try await db.raw(
            "SELECT * FROM srv_transactions WHERE submission_id = \(bind: submissionId)\(forUpdate)"
        ).ledgerRows()
    }

    /// `locking: false`, as `transaction(environment:transactionId:locking:on:)`.
    package func transactions(
        environment: AppStoreEnvironment,
        originalTransactionId: String,
        locking: Bool = true,
        on db: any SQLDatabase
    ) async throws -> [LedgerRecord] {
        let statement = locking ? Self.byOriginal : Self.byOriginalRead
        return try await db.all(statement(environment.rawValue, originalTransactionId)).map(LedgerRecord.init(row:))
    }

    // SQLite's planner, without statistics, prefers the primary key's `environment` (every transaction of the
    // environment) to this index: a read per purchase that grew with the ledger.
    private static let byOriginalOnSQLite = """
        SELECT * FROM srv_transactions INDEXED BY srv_transactions_original WHERE environment = ?1
        AND original_transaction_id = ?2 ORDER BY purchase_date
        """
    private static let byOriginalOnPostgres = """
        SELECT * FROM srv_transactions WHERE environment = ?1
        AND original_transaction_id = ?2 ORDER BY purchase_date
        """
    private static let byOriginal = FixedStatement(
        sqlite: byOriginalOnSQLite,
        postgres: byOriginalOnPostgres + " FOR UPDATE"
    )
    private static let byOriginalRead = FixedStatement(sqlite: byOriginalOnSQLite, postgres: byOriginalOnPostgres)

    /// An app's ledger rows whose transaction id, or original transaction id, is `id` (any environment), at most
    /// `limit` by original (the console's search). The environments are named so that each lookup is one probe of the
    /// key or of the original's index per environment; the app is checked on the rows found (a condition on it would
    /// let the planner prefer the app's whole range).
    package func transactions(bundleId: String, transactionOrOriginalId id: String, limit: Int, on db: any SQLDatabase)
        async throws -> [LedgerRecord]
    {
        let environments = AppStoreEnvironment.known.map(\.rawValue)
        let byId = try await db.select().column("*").from("srv_transactions")
            .where("environment", .in, environments).where("transaction_id", .equal, id)
            .all(decoding: LedgerRecord.self, with: Self.decoding)
        // By original: the read of a subscription's transactions, whose statement makes SQLite use the index (a
        // condition on the environments alone let it walk the whole primary key: 0.5 s on a million).
        var byOriginal: [LedgerRecord] = []
        for environment in AppStoreEnvironment.known where byOriginal.count < limit {
            byOriginal += try await transactions(environment: environment, originalTransactionId: id, on: db)
        }
        return (byId + byOriginal.prefix(limit).filter { $0.transactionId != id }).filter { $0.bundleId == bundleId }
    }

    /// An app's purchases in `environment` (original transaction ids, in order), `limit` at a time after `after`,
    /// that came from the App Store: not an operator's grant, whose `grant-…` id no App Store knows. Catch-up asks
    /// for the ones no history read listed.
    package func originalTransactionIds(
        bundleId: String,
        environment: AppStoreEnvironment,
        after: String?,
        limit: Int,
        on db: any SQLDatabase
    ) async throws -> [String] {
        let cursor: SQLQueryString = after.map { " AND original_transaction_id > \(bind: $0)" } ?? ""
        return try await db.raw(
            """
            SELECT DISTINCT original_transaction_id FROM srv_transactions
            WHERE bundle_id = \(bind: bundleId) AND environment = \(bind: environment)
              AND source <> \(bind: LedgerSource.operator.rawValue)\(cursor)
            ORDER BY original_transaction_id LIMIT \(literal: limit)
            """
        ).all().map { try $0.decode(column: "original_transaction_id", as: String.self) }
    }

    // MARK: Balances

    package func balances(bundleId: String, customerId: String, on db: any SQLDatabase) async throws -> [String: Int64]
    {
        let rows = try await db.all(Self.balances(bundleId, customerId))
        var result: [String: Int64] = [:]
        for row in rows {
            result[try row.decode(column: "credit", as: String.self)] = try row.decode(
                column: "balance",
                as: Int64.self
            )
        }
        return result
    }

    private static let balances = FixedStatement(
        "SELECT credit, balance FROM srv_balances WHERE bundle_id = ?1 AND customer_id = ?2"
    )

    /// The balance entries written under `reference` (a debit's has one credit; a purchase's one per credit).
    package func balanceEntries(bundleId: String, reference: String, on db: any SQLDatabase) async throws
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
    package func financeEntry(
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

    // MARK: Totals

    /// How much a database holds, for `till check`'s summary: ledger rows, customers with one, events.
    package func counts() async throws -> (transactions: Int, customers: Int, events: Int) {
        let row = try await database.sql.raw(
            """
            SELECT (SELECT COUNT(*) FROM srv_transactions) AS transactions,
                   (SELECT COUNT(*) FROM (SELECT DISTINCT bundle_id, customer_id FROM srv_transactions) c) AS customers,
                   (SELECT COUNT(*) FROM srv_events) AS events
            """
        ).first()
        return (
            Int(try row?.decode(column: "transactions", as: Int64.self) ?? 0),
            Int(try row?.decode(column: "customers", as: Int64.self) ?? 0),
            Int(try row?.decode(column: "events", as: Int64.self) ?? 0)
        )
    }

    package init(
        database: TillDatabase
    ) {
        self.database = database
    }
}
