import Foundation
import SQLKit
import TillCore
import TillStorage

/// The figures (`Figures`): the journal the ledger writes (`srv_figure_changes`), the money and renewals of each day
/// (`srv_figures_daily`) and one summary per auto-renewable subscription (`srv_figures_subscriptions`), migration
/// 020-console. Every read of the overview and of the revenue report is here, each on an index.
package struct FigureStore: ServerSQLStore {
    package let database: TillDatabase

    // MARK: The revenue report

    /// One production money entry, as the revenue report reads it.
    package struct FinanceRow: Decodable {
        package var productId: String
        package var currency: String
        package var amount: Int64
        package var occurredAt: Int64
    }

    /// The production money entries between `from` (included) and `to` (excluded), of one app or all.
    package func productionFinance(bundleId: String?, from: Int64, to: Int64) async throws -> [FinanceRow] {
        var query = sql.select().columns("product_id", "currency", "amount", "occurred_at").from("srv_finance")
            .where("environment", .equal, AppStoreEnvironment.production.rawValue)
            .where("occurred_at", .greaterThanOrEqual, from).where("occurred_at", .lessThan, to)
        if let bundleId { query = query.where("bundle_id", .equal, bundleId) }
        return try await query.all(decoding: FinanceRow.self, with: Self.decoding)
    }

    // MARK: The journal

    /// Writes the journal lines of a change (one per change of the ledger): rows by hand, not through Codable
    /// (sql-kit's `models(_:)` cost 1.5% of a purchase's CPU, perf).
    package func insert(figureChanges: [FigureChange], on db: any SQLDatabase) async throws {
        guard !figureChanges.isEmpty else { return }
        try await db.run(
            RecordStatements.insert(
                into: "srv_figure_changes",
                columns: [
                    "bundle_id", "environment", "measure", "day", "product_id", "currency", "amount", "entries",
                    "original_transaction_id",
                ],
                rows: figureChanges.map { change in
                    [
                        change.bundleId, change.environment.rawValue, change.measure.rawValue, change.day,
                        change.productId, change.currency, change.amount, change.entries, change.originalTransactionId,
                    ]
                }
            )
        )
    }

    /// One line of the journal, with its place in it.
    package struct JournalLine: Decodable, Sendable {
        package var id: Int64
        /// The line's columns besides its id, as `FigureChange` wrote them.
        package var change: FigureChange

        private enum CodingKeys: String, CodingKey { case id }

        package init(from decoder: any Decoder) throws {
            id = try decoder.container(keyedBy: CodingKeys.self).decode(Int64.self, forKey: .id)
            change = try FigureChange(from: decoder)
        }
    }

    /// The first `limit` lines of the journal, oldest first.
    package func figureChanges(limit: Int, on db: any SQLDatabase) async throws -> [JournalLine] {
        try await db.raw("SELECT * FROM srv_figure_changes ORDER BY id LIMIT \(literal: limit)")
            .all(decoding: JournalLine.self, with: Self.decoding)
    }

    package func deleteFigureChanges(ids: [Int64], on db: any SQLDatabase) async throws {
        for chunk in ids.chunked(500) {
            try await db.delete(from: "srv_figure_changes").where("id", .in, Array(chunk)).run()
        }
    }

    /// How many lines wait to be folded.
    package func pendingFigureChanges(on db: any SQLDatabase) async throws -> Int {
        try await db.raw("SELECT COUNT(*) AS n FROM srv_figure_changes").first()?.decode(column: "n", as: Int.self) ?? 0
    }

    /// Holds, until the end of `db`'s transaction, the right to fold the journal: two servers sharing a PostgreSQL
    /// database fold one after the other (a summary read by one must not be overwritten by an older read of the
    /// other's). SQLite has one writer already.
    package func lockFigures(on db: any SQLDatabase) async throws {
        guard database.engine == .postgres else { return }
        try await db.raw("SELECT pg_advisory_xact_lock(\(literal: Self.figuresLock))").run()
    }

    private static let figuresLock: Int64 = 0x7469_6C6C_6669_6773  // "tillfigs"

    // MARK: The days

    /// A day's money (milliunits) or renewals of one product, currency and kind in one environment.
    package struct DailyFigure: Codable, Sendable, Hashable {
        package var bundleId: String
        package var environment: AppStoreEnvironment
        package var day: Int64
        package var measure: FigureMeasure
        package var productId: String
        package var currency: String
        package var amount: Int64
        package var entries: Int64

        package init(
            bundleId: String,
            environment: AppStoreEnvironment,
            day: Int64,
            measure: FigureMeasure,
            productId: String,
            currency: String,
            amount: Int64,
            entries: Int64
        ) {
            self.bundleId = bundleId
            self.environment = environment
            self.day = day
            self.measure = measure
            self.productId = productId
            self.currency = currency
            self.amount = amount
            self.entries = entries
        }
    }

    /// Adds each figure to its day's (a new row when the day had none).
    package func add(dailyFigures: [DailyFigure], on db: any SQLDatabase) async throws {
        for chunk in dailyFigures.chunked(200) {
            try await db.insert(into: "srv_figures_daily").models(Array(chunk), with: Self.encoding)
                .onConflict(with: ["bundle_id", "environment", "day", "measure", "product_id", "currency"]) {
                    $0.set("amount", to: SQLRaw("srv_figures_daily.amount + excluded.amount"))
                        .set("entries", to: SQLRaw("srv_figures_daily.entries + excluded.entries"))
                }.run()
        }
    }

    /// The figures of an app's days from `fromDay` to `toDay` (excluded) in these environments (all when nil), of
    /// these measures.
    package func dailyFigures(
        bundleId: String?,
        environments: [AppStoreEnvironment]?,
        fromDay: Int64,
        toDay: Int64,
        measures: [FigureMeasure],
        on db: any SQLDatabase
    ) async throws -> [DailyFigure] {
        var query = db.select().column("*").from("srv_figures_daily")
        if let bundleId { query = query.where("bundle_id", .equal, bundleId) }
        if let environments { query = query.where("environment", .in, environments.map(\.rawValue)) }
        return try await query.where("day", .greaterThanOrEqual, fromDay).where("day", .lessThan, toDay)
            .where("measure", .in, measures.map(\.rawValue))
            .all().map(DailyFigure.init(row:))
    }

    // MARK: The subscriptions

    /// The ledger rows of these subscriptions of one environment, as the figures read them (no lock: the fold reads
    /// what is committed, and a later change journals the subscription again).
    package func subscriptionPeriods(
        environment: AppStoreEnvironment,
        originalTransactionIds: [String],
        on db: any SQLDatabase
    ) async throws -> [LedgerRecord] {
        guard !originalTransactionIds.isEmpty else { return [] }
        return try await db.select().column("*").from("srv_transactions")
            .where("environment", .equal, environment.rawValue)
            .where("original_transaction_id", .in, originalTransactionIds)
            .all(decoding: LedgerRecord.self, with: Self.decoding)
    }

    package func save(subscriptionFigures: [SubscriptionFigure], on db: any SQLDatabase) async throws {
        for chunk in subscriptionFigures.chunked(200) {
            try await db.insert(into: "srv_figures_subscriptions").models(Array(chunk), with: Self.encoding)
                .onConflict(with: ["environment", "original_transaction_id"]) {
                    try $0.set(excludedContentOf: chunk[chunk.startIndex], with: Self.encoding)
                }.run()
        }
    }

    package func deleteSubscriptionFigures(
        environment: AppStoreEnvironment,
        originalTransactionIds: [String],
        on db: any SQLDatabase
    ) async throws {
        for chunk in originalTransactionIds.chunked(500) {
            try await db.delete(from: "srv_figures_subscriptions").where("environment", .equal, environment.rawValue)
                .where("original_transaction_id", .in, Array(chunk)).run()
        }
    }

    /// Subscriptions active at `instant` (started, not yet ended) in one environment, and their MRR, per currency.
    package struct ActiveSubscriptions: Decodable, Sendable {
        package var currency: String?
        package var subscriptions: Int
        package var monthly: Int64?
    }

    package func activeSubscriptions(
        bundleId: String,
        environment: AppStoreEnvironment,
        at instant: Int64,
        on db: any SQLDatabase
    ) async throws -> [ActiveSubscriptions] {
        try await db.raw(
            """
            SELECT currency, COUNT(*) AS subscriptions, CAST(SUM(monthly_amount) AS BIGINT) AS monthly FROM srv_figures_subscriptions
            WHERE bundle_id = \(bind: bundleId) AND environment = \(bind: environment.rawValue)
              AND ends_at > \(bind: instant) AND started_at <= \(bind: instant)
            GROUP BY currency
            """
        ).all(decoding: ActiveSubscriptions.self, with: Self.decoding)
    }

    /// Per day, of one environment: subscriptions started from `from` to `to`, and of them those that began with a
    /// free trial.
    package struct StartsOfDay: Decodable, Sendable {
        package var day: Int64
        package var started: Int
        package var trials: Int
    }

    package func subscriptionStarts(
        bundleId: String,
        environment: AppStoreEnvironment,
        from: Int64,
        to: Int64,
        on db: any SQLDatabase
    ) async throws -> [StartsOfDay] {
        try await db.raw(
            """
            SELECT started_at / \(literal: FigureChange.dayLength) AS day, COUNT(*) AS started,
                SUM(CASE WHEN trial THEN 1 ELSE 0 END) AS trials
            FROM srv_figures_subscriptions
            WHERE bundle_id = \(bind: bundleId) AND environment = \(bind: environment.rawValue)
              AND started_at >= \(bind: from) AND started_at < \(bind: to)
            GROUP BY started_at / \(literal: FigureChange.dayLength)
            """
        ).all(decoding: StartsOfDay.self, with: Self.decoding)
    }

    /// Per day, of one environment: subscriptions whose access ended from `from` to `to` (expired: not renewed, or
    /// refunded), and of them those that were active before `from` (churned).
    package struct EndsOfDay: Decodable, Sendable {
        package var day: Int64
        package var ended: Int
        package var churned: Int
    }

    package func subscriptionEnds(
        bundleId: String,
        environment: AppStoreEnvironment,
        from: Int64,
        to: Int64,
        on db: any SQLDatabase
    ) async throws -> [EndsOfDay] {
        try await db.raw(
            """
            SELECT ends_at / \(literal: FigureChange.dayLength) AS day, COUNT(*) AS ended,
                SUM(CASE WHEN started_at < \(bind: from) THEN 1 ELSE 0 END) AS churned
            FROM srv_figures_subscriptions
            WHERE bundle_id = \(bind: bundleId) AND environment = \(bind: environment.rawValue)
              AND ends_at >= \(bind: from) AND ends_at < \(bind: to)
            GROUP BY ends_at / \(literal: FigureChange.dayLength)
            """
        ).all(decoding: EndsOfDay.self, with: Self.decoding)
    }

    /// Of one environment's free trials that ended from `from` to `to`: how many, and how many were followed by a
    /// paid period.
    package func trialOutcomes(
        bundleId: String,
        environment: AppStoreEnvironment,
        from: Int64,
        to: Int64,
        on db: any SQLDatabase
    ) async throws -> (ended: Int, converted: Int) {
        let row = try await db.raw(
            """
            SELECT COUNT(*) AS ended, SUM(CASE WHEN converted_at IS NOT NULL THEN 1 ELSE 0 END) AS converted
            FROM srv_figures_subscriptions
            WHERE bundle_id = \(bind: bundleId) AND environment = \(bind: environment.rawValue) AND trial
              AND trial_ends_at >= \(bind: from) AND trial_ends_at < \(bind: to)
            """
        ).first()
        return (
            try row?.decode(column: "ended", as: Int?.self) ?? 0,
            try row?.decode(column: "converted", as: Int?.self) ?? 0
        )
    }

    // MARK: Rebuilding

    /// Makes the figures anew from the ledger and the books: the days from `srv_finance` and the renewals in
    /// `srv_transactions`, and a journal line for every subscription, whose summaries the next folds compute. For a
    /// database whose figures were lost or never made (`till bench console` writes its ledger without them).
    package func rebuildFigures(on db: any SQLDatabase) async throws {
        for statement in Self.rebuildStatements { try await db.raw(SQLQueryString(statement)).run() }
    }

    /// What `rebuildFigures` runs; migration 020 runs the same on the ledger an upgrade finds.
    package static let rebuildStatements = [
        "DELETE FROM srv_figure_changes",
        "DELETE FROM srv_figures_daily",
        "DELETE FROM srv_figures_subscriptions",
        """
        INSERT INTO srv_figures_daily (bundle_id, environment, day, measure, product_id, currency, amount, entries)
        SELECT bundle_id, environment, occurred_at / \(FigureChange.dayLength), kind, product_id, currency,
            SUM(amount), COUNT(*)
        FROM srv_finance GROUP BY bundle_id, environment, occurred_at / \(FigureChange.dayLength), kind, product_id,
            currency
        """,
        """
        INSERT INTO srv_figures_daily (bundle_id, environment, day, measure, product_id, currency, amount, entries)
        SELECT bundle_id, environment, purchase_date / \(FigureChange.dayLength), 'renewal', product_id, '', COUNT(*),
            COUNT(*)
        FROM srv_transactions
        WHERE product_type = 'autoRenewable' AND source <> 'operator' AND transaction_id <> original_transaction_id
        GROUP BY bundle_id, environment, purchase_date / \(FigureChange.dayLength), product_id
        """,
        """
        INSERT INTO srv_figure_changes (bundle_id, environment, measure, amount, entries, original_transaction_id)
        SELECT DISTINCT bundle_id, environment, 'subscription', 0, 0, original_transaction_id FROM srv_transactions
        WHERE product_type = 'autoRenewable' AND source <> 'operator'
        """,
    ]

    package init(
        database: TillDatabase
    ) {
        self.database = database
    }
}

extension Array {
    /// The array in consecutive slices of at most `size` elements.
    package func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}

extension FigureStore.DailyFigure {
    /// A row read column by column. Hand-written because of a measurement: an overview of three years reads some
    /// twelve thousand of these rows, and SQLKit's `Codable` row decoder (a keyed container and a snake-case key
    /// conversion per column) was half of that page's time on `till bench console`.
    package init(row: any SQLRow) throws {
        func text(_ column: String) throws -> String { try row.decode(column: column, as: String.self) }
        func number(_ column: String) throws -> Int64 { try row.decode(column: column, as: Int64.self) }
        guard let measure = FigureMeasure(rawValue: try text("measure")) else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "an unknown figure measure"))
        }
        self.init(
            bundleId: try text("bundle_id"),
            environment: AppStoreEnvironment(rawValue: try text("environment")),
            day: try number("day"),
            measure: measure,
            productId: try text("product_id"),
            currency: try text("currency"),
            amount: try number("amount"),
            entries: try number("entries")
        )
    }
}
