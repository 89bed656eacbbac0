import SQLKit
import TillCore
import TillStorage

/// The ledger's bulk path: a whole ledger written at once in multi-row INSERTs, into a database no server is serving
/// (`till bench ledger`'s generator, which writes a million transactions for the console's benchmark).
///
/// It writes rows as `Ledger`'s functions would have left them — transactions, the books, credits' entries, renewal
/// states, customers and the guests linked to them — without their rules or figures' journal, and the events the
/// caller made for them (`EventRecord`, as the event log writes it). The caller then makes the totals from what was
/// loaded: `Ledger.rebuildBalances()` (credits) and `Figures.rebuild()` (the figures). It is the one way into the
/// ledger's tables and its outbox besides `Ledger`, so it lives in the ledger's module beside `LedgerStore`.
package struct LedgerBulkLoad: Sendable {
    private typealias Row = [(any Encodable & Sendable)?]

    private var transactions: [Row] = []
    private var books: [Row] = []
    private var entries: [Row] = []
    private var customers: [Row] = []
    private var states: [SubscriptionStateRecord] = []
    private var events: [Row] = []

    package init() {}

    /// Rows gathered since the last `clear()`.
    package var rows: Int {
        transactions.count + books.count + entries.count + customers.count + states.count + events.count
    }

    /// A customer, or a guest id linked to the account `aliasOf`.
    package mutating func customer(bundleId: String, customerId: String, aliasOf: String? = nil, at: Int64) {
        customers.append([bundleId, customerId, aliasOf, at])
    }

    /// A transaction's row.
    package mutating func transaction(_ record: LedgerRecord) {
        transactions.append(record.values)
    }

    /// An entry of the books for a transaction: its money (`amount` in milliunits of its currency, negative for a
    /// refund) at `at`.
    package mutating func book(_ record: LedgerRecord, amount: Int64, currency: String, at: Int64, kind: FinanceKind) {
        books.append([
            record.environment.rawValue, record.transactionId, record.bundleId, record.productId, amount, currency, at,
            kind.rawValue,
        ])
    }

    /// A move of a customer's credits (`reference` says what moved them, as the ledger writes it).
    package mutating func creditEntry(
        bundleId: String,
        customerId: String,
        credit: String,
        delta: Int64,
        reference: String,
        at: Int64
    ) {
        entries.append([bundleId, customerId, credit, delta, reference, at])
    }

    /// A customer who bought the consumable `productId` `count` times, a minute apart from `start` (ms), each purchase
    /// confirmed and crediting `amount` of `credit`, as the ledger would have left them (its row and its credits'
    /// entry, referenced as `Ledger.reference("purchase", of:)` does): a game's long history, for benchmarks and
    /// tests. Transaction ids are taken from `nextId` onwards, which is left past the last.
    package mutating func consumables(
        _ count: Int,
        of productId: String,
        crediting amount: Int64,
        of credit: String,
        bundleId: String,
        customerId: String,
        from start: Int64,
        nextId: inout Int64
    ) {
        for purchase in 0..<count {
            let id = String(nextId)
            nextId += 1
            let date = start + Int64(purchase) * 60_000
            let record = LedgerRecord(
                environment: .sandbox,
                transactionId: id,
                bundleId: bundleId,
                customerId: customerId,
                originalTransactionId: id,
                productId: productId,
                productType: .consumable,
                quantity: 1,
                purchaseDate: date,
                isUpgraded: false,
                ownership: .purchased,
                submissionId: "history-\(id)",
                source: .submission,
                confirmed: true,
                createdAt: date,
                updatedAt: date
            )
            transaction(record)
            creditEntry(
                bundleId: bundleId,
                customerId: customerId,
                credit: credit,
                delta: amount,
                reference: Ledger.reference("purchase", of: record),
                at: date
            )
        }
    }

    /// A subscription's renewal state.
    package mutating func renewalState(_ state: SubscriptionStateRecord) {
        states.append(state)
    }

    /// An event of the outbox, numbered by the caller (sequences rising, as the event log gives them).
    package mutating func event(_ record: EventRecord) {
        events.append(record.values)
    }

    /// Forgets the rows written.
    package mutating func clear() {
        transactions = []
        books = []
        entries = []
        customers = []
        states = []
        events = []
    }

    /// Writes what was gathered on `db` (one transaction's connection), customers first.
    package func write(on db: any SQLDatabase) async throws {
        try await Self.insert(
            "srv_customers",
            ["bundle_id", "customer_id", "alias_of", "created_at"],
            customers,
            on: db
        )
        try await Self.insert("srv_transactions", LedgerRecord.columns, transactions, on: db)
        try await Self.insert(
            "srv_finance",
            ["environment", "transaction_id", "bundle_id", "product_id", "amount", "currency", "occurred_at", "kind"],
            books,
            on: db
        )
        try await Self.insert(
            "srv_balance_entries",
            ["bundle_id", "customer_id", "credit", "delta", "reference", "created_at"],
            entries,
            on: db
        )
        for chunk in Self.chunks(of: states, columns: 25) {
            try await db.insert(into: "srv_subscription_states").models(chunk, with: ColumnNames.encoder).run()
        }
        try await Self.insert("srv_events", EventRecord.columns, events, on: db)
    }

    private static func insert(_ table: String, _ columns: [String], _ rows: [Row], on db: any SQLDatabase)
        async throws
    {
        for chunk in chunks(of: rows, columns: columns.count) {
            try await db.execute(sql: RecordStatements.insert(into: table, columns: columns, rows: chunk)) { _ in }
        }
    }

    /// Rows in slices that keep a statement's bound values under both engines' limits (SQLite's 32,766).
    private static func chunks<Element>(of rows: [Element], columns: Int) -> [[Element]] {
        let size = max(1, 30_000 / columns)
        return stride(from: 0, to: rows.count, by: size).map { Array(rows[$0..<min($0 + size, rows.count)]) }
    }

    /// What a loaded ledger's benchmark asks about (`till bench console`): the customer with the most transactions
    /// and how many, one renewal (a transaction that is not its purchase's first), and the totals. Nil when the
    /// ledger has no renewal.
    package struct Landmarks: Sendable {
        package var busiestCustomer: String
        package var busiestCustomersTransactions: Int
        package var renewal: (transactionId: String, originalTransactionId: String)
        package var transactions: Int
        package var customers: Int
    }

    /// Reads the `Landmarks` of the ledger `db` holds: whole-table reads, for a benchmark's setup, not a server's.
    package static func landmarks(on db: any SQLDatabase) async throws -> Landmarks? {
        guard
            let busiest = try await db.raw(
                """
                SELECT customer_id, COUNT(*) AS n FROM srv_transactions GROUP BY customer_id ORDER BY n DESC LIMIT 1
                """
            ).first(),
            let renewal = try await db.raw(
                """
                SELECT transaction_id, original_transaction_id FROM srv_transactions
                WHERE transaction_id <> original_transaction_id LIMIT 1
                """
            ).first(),
            let totals = try await db.raw(
                """
                SELECT (SELECT COUNT(*) FROM srv_transactions) AS transactions,
                       (SELECT COUNT(*) FROM srv_customers) AS customers
                """
            ).first()
        else { return nil }
        return Landmarks(
            busiestCustomer: try busiest.decode(column: "customer_id", as: String.self),
            busiestCustomersTransactions: Int(try busiest.decode(column: "n", as: Int64.self)),
            renewal: (
                try renewal.decode(column: "transaction_id", as: String.self),
                try renewal.decode(column: "original_transaction_id", as: String.self)
            ),
            transactions: Int(try totals.decode(column: "transactions", as: Int64.self)),
            customers: Int(try totals.decode(column: "customers", as: Int64.self))
        )
    }
}
