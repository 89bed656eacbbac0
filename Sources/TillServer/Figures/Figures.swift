import Foundation
import Logging
import SQLKit
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillStorage

/// The figures an operator reads: money per day, product and currency (the revenue report, the console's overview),
/// renewals, and each auto-renewable subscription's start, end, trial and price (active subscriptions, MRR, churn,
/// trial conversion), kept so that a page reads hundreds of rows where the ledger has millions.
///
/// The ledger keeps them exact: every write of a ledger row or of the books notes what it did to the figures in a
/// journal (`srv_figure_changes`, written in the change's own transaction by the ledger), and `refresh` folds the
/// journal into the days (`srv_figures_daily`: amounts added) and the subscriptions' summaries
/// (`srv_figures_subscriptions`: read again from their rows), deleting each line in the transaction that folds it.
/// `FiguresWorker` folds every second; a reader folds what is left before it reads, so it sees every committed change.
public struct Figures: Sendable {
    let database: TillDatabase
    /// The figures' own tables: the journal, the daily figures and the subscription periods.
    var figureStore: FigureStore { FigureStore(database: database) }
    let clock: ServerClock
    let logger: Logger
    /// One fold at a time in this process (SQLite reads before its short write transaction; PostgreSQL's folds also
    /// take an advisory lock, for other processes).
    let folding: AsyncLock

    init(database: TillDatabase, clock: ServerClock, logger: Logger) {
        self.database = database
        self.clock = clock
        self.logger = logger
        self.folding = AsyncLock()
    }

    /// Lines of the journal folded in one transaction.
    static let batch = 1000

    // MARK: Folding the journal

    /// Folds the journal into the figures; answers how many lines it folded.
    @discardableResult
    public func refresh() async throws -> Int {
        await folding.lock()
        defer { folding.unlock() }
        var folded = 0
        while true {
            let count: Int
            if database.engine == .postgres {
                count = try await database.transaction(bookkeeping: true) { db in
                    try await figureStore.lockFigures(on: db)
                    let fold = try await plan(on: db)
                    try await apply(fold, on: db)
                    return fold.lines.count
                }
            } else {
                // One process owns an SQLite file, and `folding` holds its folds one at a time: the rows are read
                // before the write transaction, which then holds the single writer only to write.
                let fold = try await database.read { db in try await plan(on: db) }
                if !fold.lines.isEmpty {
                    try await database.transaction(bookkeeping: true) { db in try await apply(fold, on: db) }
                }
                count = fold.lines.count
            }
            folded += count
            if count < Self.batch { return folded }
        }
    }

    /// What folding the journal's first lines changes.
    private struct Fold: Sendable {
        var lines: [Int64] = []
        var daily: [FigureStore.DailyFigure] = []
        var summaries: [SubscriptionFigure] = []
        var gone: [AppStoreEnvironment: [String]] = [:]
    }

    private func plan(on db: any SQLDatabase) async throws -> Fold {
        var fold = Fold()
        let lines = try await figureStore.figureChanges(limit: Self.batch, on: db)
        fold.lines = lines.map(\.id)
        var days: [FigureStore.DailyFigure: (amount: Int64, entries: Int64)] = [:]
        var subscriptions: [AppStoreEnvironment: Set<String>] = [:]
        for line in lines.map(\.change) {
            if line.measure == .subscription {
                if let id = line.originalTransactionId { subscriptions[line.environment, default: []].insert(id) }
                continue
            }
            guard let day = line.day else { continue }
            let key = FigureStore.DailyFigure(
                bundleId: line.bundleId,
                environment: line.environment,
                day: day,
                measure: line.measure,
                productId: line.productId ?? "",
                currency: line.currency ?? "",
                amount: 0,
                entries: 0
            )
            days[key, default: (0, 0)].amount += line.amount
            days[key, default: (0, 0)].entries += line.entries
        }
        fold.daily = days.map { key, sum in
            var figure = key
            figure.amount = sum.amount
            figure.entries = sum.entries
            return figure
        }
        let now = clock.milliseconds
        for (environment, ids) in subscriptions {
            for chunk in Array(ids).sorted().chunked(500) {
                let rows = try await figureStore.subscriptionPeriods(
                    environment: environment,
                    originalTransactionIds: Array(chunk),
                    on: db
                )
                let byPurchase = Dictionary(grouping: rows, by: \.originalTransactionId)
                for id in chunk {
                    if let summary = SubscriptionFigure.summary(of: byPurchase[id] ?? [], now: now) {
                        fold.summaries.append(summary)
                    } else {
                        fold.gone[environment, default: []].append(id)
                    }
                }
            }
        }
        return fold
    }

    private func apply(_ fold: Fold, on db: any SQLDatabase) async throws {
        try await figureStore.add(dailyFigures: fold.daily, on: db)
        try await figureStore.save(subscriptionFigures: fold.summaries, on: db)
        for (environment, ids) in fold.gone {
            try await figureStore.deleteSubscriptionFigures(
                environment: environment,
                originalTransactionIds: ids,
                on: db
            )
        }
        try await figureStore.deleteFigureChanges(ids: fold.lines, on: db)
    }

    /// Makes every figure anew from the ledger and the books (`till bench console` after writing its ledger).
    public func rebuild() async throws {
        await folding.lock()
        try await database.transaction { db in try await figureStore.rebuildFigures(on: db) }
        folding.unlock()
        try await refresh()
    }

    // MARK: The revenue report

    /// The money of production purchases between `from` and `to`, grouped by day, product or currency; the sandbox
    /// is never in it. Whole days are read from the daily figures, the ends of a range that starts or stops within a
    /// day from the books.
    public func revenue(bundleId: String?, from: Int64, to: Int64, groupBy: RevenueReport.GroupByPayload)
        async throws -> RevenueReport
    {
        try await refresh()
        let day = FigureChange.dayLength
        let firstDay = FigureChange.day(of: from + day - 1)
        let lastDay = FigureChange.day(of: to)
        var entries: [(day: Int64, productId: String, currency: String, amount: Int64, count: Int64)] = []
        var raw: [(Int64, Int64)] = [(from, to)]
        if firstDay < lastDay {
            raw = [(from, firstDay * day), (lastDay * day, to)].filter { $0.0 < $0.1 }
            for figure in try await figureStore.dailyFigures(
                bundleId: bundleId,
                environments: [.production],
                fromDay: firstDay,
                toDay: lastDay,
                measures: FigureMeasure.money,
                on: database.sql
            ) {
                entries.append((figure.day, figure.productId, figure.currency, figure.amount, figure.entries))
            }
        }
        for (start, end) in raw {
            for row in try await figureStore.productionFinance(bundleId: bundleId, from: start, to: end) {
                entries.append((FigureChange.day(of: row.occurredAt), row.productId, row.currency, row.amount, 1))
            }
        }
        var grouped: [String: Components.Schemas.RevenueRow] = [:]
        var totals: [String: Int64] = [:]
        for entry in entries {
            let key: String =
                switch groupBy {
                case .product: entry.productId
                case .currency: entry.currency
                case .day: Self.dateText(ofDay: entry.day)
                }
            let id = key + "|" + entry.currency
            var row =
                grouped[id] ?? Components.Schemas.RevenueRow(key: key, currency: entry.currency, amount: 0, count: 0)
            row.amount += entry.amount
            row.count += Int(entry.count)
            grouped[id] = row
            totals[entry.currency, default: 0] += entry.amount
        }
        return RevenueReport(
            from: from,
            to: to,
            groupBy: groupBy,
            rows: grouped.values.filter { $0.count != 0 || $0.amount != 0 }
                .sorted { ($0.key, $0.currency) < ($1.key, $1.currency) },
            totals: .init(additionalProperties: totals)
        )
    }

    /// `2026-11-22` for a UTC day.
    static func dateText(ofDay day: Int64) -> String {
        String(ReceiptDate.formatRFC3339(Date(millisecondsSince1970: day * FigureChange.dayLength)).prefix(10))
    }
}
