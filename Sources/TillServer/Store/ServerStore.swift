import Foundation
import SQLKit
import TillContract
import TillCore
import TillStorage

/// The verification server's persistence, on SQLite or PostgreSQL.
struct ServerStore: Sendable {
    let database: TillDatabase
    var sql: any SQLDatabase { database.sql }

    static let encoding = ColumnNames.encoder
    static let decoding = ColumnNames.decoder

    func migrate() async throws {
        try await database.migrate(ServerSchema.migrations, schema: ServerSchema.name)
    }

    /// Clears every claim on the queue (only for a process that knows no other worker is alive); returns
    /// how many submissions were claimed.
    func releaseClaims() async throws -> Int {
        try await database.transaction(bookkeeping: true) { db in
            try await db.raw(
                "UPDATE srv_submissions SET claimed_until = NULL WHERE claimed_until IS NOT NULL RETURNING id"
            ).all().count
        }
    }

    private static func json<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: (try? encoder.encode(value)) ?? Data("null".utf8), as: UTF8.self)
    }

    private static func decodeJSON<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(text.utf8))
    }

    // MARK: Settings

    /// A stored setting, or `make()` stored as it on first use (several processes agree on the first one stored).
    func setting(_ name: String, orStore make: () -> String) async throws -> String {
        try await sql.raw(
            "INSERT INTO srv_settings (name, value) VALUES (\(bind: name), \(bind: make())) ON CONFLICT (name) DO NOTHING"
        ).run()
        return try await sql.raw("SELECT value FROM srv_settings WHERE name = \(bind: name)").first()!
            .decode(column: "value", as: String.self)
    }

    // MARK: Apps

    private struct AppRow: Codable {
        var bundleId: String
        var appAppleId: Int64?
        var name: String
        var appKey: String
        var sharedSecrets: String
        var apiKeyId: String?
        var apiIssuerId: String?
        var apiPrivateKey: String?
        var acceptSandbox: Bool
        var restorePolicy: String
        var createdAt: Int64
    }

    func save(_ app: ServerApp, on db: any SQLDatabase) async throws {
        let row = AppRow(
            bundleId: app.bundleId,
            appAppleId: app.appAppleId,
            name: app.name,
            appKey: app.appKey,
            sharedSecrets: Self.json(app.sharedSecrets),
            apiKeyId: app.apiKeyId,
            apiIssuerId: app.apiIssuerId,
            apiPrivateKey: app.apiPrivateKey,
            acceptSandbox: app.acceptSandbox,
            restorePolicy: app.restorePolicy.rawValue,
            createdAt: app.createdAt
        )
        try await db.insert(into: "srv_apps").model(row, with: Self.encoding)
            .onConflict(with: ["bundle_id"]) { try $0.set(excludedContentOf: row, with: Self.encoding) }.run()
    }

    func app(bundleId: String, on db: any SQLDatabase) async throws -> ServerApp? {
        try await db.select().column("*").from("srv_apps").where("bundle_id", .equal, bundleId)
            .first(decoding: AppRow.self, with: Self.decoding).map(Self.app)
    }

    func app(appKey: String, on db: any SQLDatabase) async throws -> ServerApp? {
        try await db.select().column("*").from("srv_apps").where("app_key", .equal, appKey)
            .first(decoding: AppRow.self, with: Self.decoding).map(Self.app)
    }

    func apps(on db: any SQLDatabase) async throws -> [ServerApp] {
        try await db.select().column("*").from("srv_apps").orderBy("created_at").all(
            decoding: AppRow.self,
            with: Self.decoding
        )
        .map(Self.app)
    }

    private static func app(_ row: AppRow) throws -> ServerApp {
        ServerApp(
            bundleId: row.bundleId,
            appAppleId: row.appAppleId,
            name: row.name,
            appKey: row.appKey,
            sharedSecrets: try decodeJSON([String].self, row.sharedSecrets),
            apiKeyId: row.apiKeyId,
            apiIssuerId: row.apiIssuerId,
            apiPrivateKey: row.apiPrivateKey,
            acceptSandbox: row.acceptSandbox,
            restorePolicy: RestorePolicy(rawValue: row.restorePolicy) ?? .keepWithFirstOwner,
            createdAt: row.createdAt
        )
    }

    // MARK: Catalogue

    private struct ProductRow: Codable {
        var bundleId: String
        var productId: String
        var type: String
        var title: String
        var entitlements: String
        var credits: String
        var content: String
        var subscriptionGroup: String?
        var durationSeconds: Int64?
        var price: Int64?
        var currency: String?
        var position: Int
        var createdAt: Int64
        var updatedAt: Int64
    }

    func save(_ product: CatalogProduct, on db: any SQLDatabase) async throws {
        let row = ProductRow(
            bundleId: product.bundleId,
            productId: product.productId,
            type: product.type.rawValue,
            title: product.title,
            entitlements: Self.json(product.entitlements),
            credits: Self.json(product.credits),
            content: Self.json(product.content),
            subscriptionGroup: product.subscriptionGroup,
            durationSeconds: product.durationSeconds,
            price: product.price,
            currency: product.currency,
            position: product.position,
            createdAt: product.createdAt,
            updatedAt: product.updatedAt
        )
        try await db.insert(into: "srv_products").model(row, with: Self.encoding)
            .onConflict(with: ["bundle_id", "product_id"]) { try $0.set(excludedContentOf: row, with: Self.encoding) }
            .run()
    }

    func products(bundleId: String, on db: any SQLDatabase) async throws -> [CatalogProduct] {
        try await db.select().column("*").from("srv_products").where("bundle_id", .equal, bundleId).orderBy("position")
            .orderBy("product_id").all(decoding: ProductRow.self, with: Self.decoding).map(Self.product)
    }

    func product(bundleId: String, productId: String, on db: any SQLDatabase) async throws -> CatalogProduct? {
        try await db.select().column("*").from("srv_products").where("bundle_id", .equal, bundleId)
            .where("product_id", .equal, productId).first(decoding: ProductRow.self, with: Self.decoding).map(
                Self.product
            )
    }

    private static func product(_ row: ProductRow) throws -> CatalogProduct {
        CatalogProduct(
            bundleId: row.bundleId,
            productId: row.productId,
            type: ProductType(rawValue: row.type) ?? .consumable,
            title: row.title,
            entitlements: try decodeJSON([String].self, row.entitlements),
            credits: try decodeJSON([String: Int64].self, row.credits),
            content: try decodeJSON([ContentFile].self, row.content),
            subscriptionGroup: row.subscriptionGroup,
            durationSeconds: row.durationSeconds,
            price: row.price,
            currency: row.currency,
            position: row.position,
            createdAt: row.createdAt,
            updatedAt: row.updatedAt
        )
    }

    // MARK: Customers

    func ensureCustomer(bundleId: String, customerId: String, at: Int64, on db: any SQLDatabase) async throws {
        try await db.raw(
            """
            INSERT INTO srv_customers (bundle_id, customer_id, alias_of, created_at)
            VALUES (\(bind: bundleId), \(bind: customerId), NULL, \(bind: at)) ON CONFLICT (bundle_id, customer_id) DO NOTHING
            """
        ).run()
    }

    /// The account a customer id stands for (a guest linked to an account resolves to the account).
    func resolve(bundleId: String, customerId: String, on db: any SQLDatabase) async throws -> String {
        var current = customerId
        for _ in 0..<8 {
            let row = try await db.raw(
                "SELECT alias_of FROM srv_customers WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: current)"
            ).first()
            guard let alias = try row?.decode(column: "alias_of", as: String?.self) else { return current }
            current = alias
        }
        return current
    }

    func setAlias(bundleId: String, customerId: String, aliasOf: String, on db: any SQLDatabase) async throws {
        try await db.raw(
            "UPDATE srv_customers SET alias_of = \(bind: aliasOf) WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: customerId)"
        ).run()
    }

    /// The account a guest id is linked to; nil for an id that is no one's guest.
    func aliasOf(bundleId: String, customerId: String, on db: any SQLDatabase) async throws -> String? {
        try await db.raw(
            "SELECT alias_of FROM srv_customers WHERE bundle_id = \(bind: bundleId) AND customer_id = \(bind: customerId)"
        ).first()?.decode(column: "alias_of", as: String?.self)
    }

    /// Whether any guest id is linked to `customerId` (which makes it an account).
    func hasGuests(bundleId: String, customerId: String, on db: any SQLDatabase) async throws -> Bool {
        try await db.raw(
            "SELECT customer_id FROM srv_customers WHERE bundle_id = \(bind: bundleId) AND alias_of = \(bind: customerId) LIMIT 1"
        ).first() != nil
    }

    // MARK: Submissions

    func insert(_ submission: SubmissionRecord, on db: any SQLDatabase) async throws {
        try await db.run(RecordStatements.insert(into: "srv_submissions", submission, with: Self.encoding))
    }

    /// What the app sent for a submission (written once, with the submission).
    func insertPayload(submissionId: String, payload: String, on db: any SQLDatabase) async throws {
        try await db.raw(
            "INSERT INTO srv_submission_payloads (id, payload) VALUES (\(bind: submissionId), \(bind: payload))"
        ).run()
    }

    func payload(submissionId: String, on db: any SQLDatabase) async throws -> String? {
        try await db.raw("SELECT payload FROM srv_submission_payloads WHERE id = \(bind: submissionId)").first()?
            .decode(column: "payload", as: String.self)
    }

    func update(_ submission: SubmissionRecord, on db: any SQLDatabase) async throws {
        try await db.run(RecordStatements.update("srv_submissions", submission, keys: ["id"], with: Self.encoding))
    }

    func submission(id: String, on db: any SQLDatabase) async throws -> SubmissionRecord? {
        try await db.raw("SELECT * FROM srv_submissions WHERE id = \(bind: id)")
            .first(decoding: SubmissionRecord.self, with: Self.decoding)
    }

    func submission(bundleId: String, idempotencyKey: String, on db: any SQLDatabase) async throws -> SubmissionRecord?
    {
        try await db.raw(
            "SELECT * FROM srv_submissions WHERE bundle_id = \(bind: bundleId) AND idempotency_key = \(bind: idempotencyKey)"
        ).first(decoding: SubmissionRecord.self, with: Self.decoding)
    }

    /// Submissions in a state, oldest change first (by `updated_at`, then `id`), after `after`, at most `limit`.
    func submissions(state: String, after: PageKey?, limit: Int, on db: any SQLDatabase) async throws
        -> [SubmissionRecord]
    {
        let after = after ?? PageKey(number: Int64.min, text: "")
        return try await db.raw(
            """
            SELECT * FROM srv_submissions WHERE state = \(bind: state)
              AND (updated_at > \(bind: after.number) OR (updated_at = \(bind: after.number) AND id > \(bind: after.text)))
            ORDER BY updated_at, id LIMIT \(literal: limit)
            """
        ).all(decoding: SubmissionRecord.self, with: Self.decoding)
    }

    /// Makes the submissions waiting to retry for `cause` (of one app, or all) due at `now`; answers how many.
    func bringForward(cause: RetryCause, bundleId: String?, at now: Int64) async throws -> Int {
        try await database.transaction(bookkeeping: true) { db in
            try await db.raw(
                """
                UPDATE srv_submissions SET next_attempt_at = \(bind: now)
                WHERE state = 'retrying' AND retry_cause = \(bind: cause.rawValue) AND next_attempt_at > \(bind: now)
                  AND (\(bind: bundleId) IS NULL OR bundle_id = \(bind: bundleId))
                RETURNING id
                """
            ).all().count
        }
    }

    func count(state: String, on db: any SQLDatabase) async throws -> Int {
        try await db.raw("SELECT COUNT(*) AS n FROM srv_submissions WHERE state = \(bind: state)").first()?
            .decode(column: "n", as: Int.self) ?? 0
    }

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
