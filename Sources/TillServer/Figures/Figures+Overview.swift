import Foundation
import TillCatalogue
import TillCore
import TillLedger
import TillStorage

/// An app's figures over a range of days in one environment, by day, week or month: what the console's overview shows
/// and exports. Money is the revenue report's (production only is revenue; the sandbox is read apart, never added to
/// it), in milliunits per currency.
public struct FiguresOverview: Sendable, Equatable {
    public enum Bucket: String, Sendable, CaseIterable {
        case day, week, month
    }

    /// One currency's money in a period or in the whole range.
    public struct Money: Sendable, Equatable {
        /// Everything the books hold for it: purchases, less refunds and revocations, plus reversals and restorations
        /// (the revenue report's amount).
        public var revenue: Int64 = 0
        /// Its entries in the books (the revenue report's count).
        public var entries: Int64 = 0
        /// Refunds (negative; a prorated refund by its share) and how many.
        public var refunds: Int64 = 0
        public var refundCount: Int64 = 0
    }

    /// The subscriptions' movements in a period or in the whole range.
    public struct Movements: Sendable, Equatable {
        /// First periods (of them, free trials).
        public var started = 0
        public var trials = 0
        public var renewals = 0
        /// Access ended (not renewed, refunded, revoked); of them, subscriptions active when the range began.
        public var expired = 0
        public var churned = 0
    }

    public struct Period: Sendable, Equatable {
        /// Its first day, UTC midnight in milliseconds, and its end (excluded).
        public var start: Int64
        public var end: Int64
        public var money: [String: Money]
        public var movements: Movements
    }

    /// Subscriptions active at an instant, and their MRR (milliunits per currency).
    public struct Active: Sendable, Equatable {
        public var at: Int64
        public var subscriptions = 0
        public var monthly: [String: Int64] = [:]
    }

    public var bundleId: String
    public var environment: AppStoreEnvironment
    public var from: Int64
    public var to: Int64
    public var bucket: Bucket
    public var periods: [Period]
    public var money: [String: Money]
    public var movements: Movements
    /// At the range's start, and at its end (now, when the range reaches past it).
    public var activeAtStart: Active
    public var activeAtEnd: Active
    /// Free trials that ended in the range, and of them those followed by a paid period.
    public var trialsEnded: Int
    public var trialsConverted: Int

    /// Converted trials per ended trial, nil when none ended.
    public var trialConversion: Double? {
        trialsEnded == 0 ? nil : Double(trialsConverted) / Double(trialsEnded)
    }

    /// The currencies with money in the range, sorted.
    public var currencies: [String] { money.keys.sorted() }
}

extension Figures {
    /// The overview of an app's days from `from` to `to` (UTC midnights, `to` excluded) in `environment`.
    public func overview(
        bundleId: String,
        environment: AppStoreEnvironment,
        from: Int64,
        to: Int64,
        bucket: FiguresOverview.Bucket
    ) async throws -> FiguresOverview {
        try await refresh()
        let day = FigureChange.dayLength
        let now = clock.milliseconds
        let fromDay = FigureChange.day(of: from)
        let toDay = FigureChange.day(of: to + day - 1)
        let ended = min(to, now)
        let starts = Self.periodStarts(fromDay: fromDay, toDay: toDay, bucket: bucket)
        var periods = zip(starts, starts.dropFirst() + [toDay]).map { start, end in
            FiguresOverview.Period(start: start * day, end: end * day, money: [:], movements: .init())
        }
        /// The period a day falls in.
        func index(_ dayNumber: Int64) -> Int? {
            guard dayNumber >= fromDay, dayNumber < toDay else { return nil }
            var low = 0
            var high = starts.count - 1
            while low < high {
                let middle = (low + high + 1) / 2
                if starts[middle] <= dayNumber { low = middle } else { high = middle - 1 }
            }
            return low
        }
        var money: [String: FiguresOverview.Money] = [:]
        var movements = FiguresOverview.Movements()
        // Two reads at once, on two of the pool's connections: on a million transactions (`till bench console`), the
        // subscriptions' starts and ends each scan some 57,000 index entries of a three-year range and the two
        // counts of active subscriptions some 57,000 more, together about 90 ms one after the other; split in two
        // halves of about the same cost, the page's time is that of the longer half. Each read sees what was
        // committed when its statements ran, as the statements of one read did already.
        let range = (from: fromDay * day, to: toDay * day, ended: ended, end: min(toDay * day, now))
        async let moneyAndStarts = database.read { db in
            (
                try await figureStore.dailyFigures(
                    bundleId: bundleId,
                    environments: [environment],
                    fromDay: fromDay,
                    toDay: toDay,
                    measures: FigureMeasure.money + [.renewal],
                    on: db
                ),
                try await figureStore.subscriptionStarts(
                    bundleId: bundleId,
                    environment: environment,
                    from: range.from,
                    to: range.to,
                    on: db
                ),
                try await figureStore.trialOutcomes(
                    bundleId: bundleId,
                    environment: environment,
                    from: range.from,
                    to: range.ended,
                    on: db
                ),
                try await figureStore.activeSubscriptions(
                    bundleId: bundleId,
                    environment: environment,
                    at: range.end,
                    on: db
                )
            )
        }
        async let endsAndActive = database.read { db in
            (
                try await figureStore.subscriptionEnds(
                    bundleId: bundleId,
                    environment: environment,
                    from: range.from,
                    to: range.ended,
                    on: db
                ),
                try await figureStore.activeSubscriptions(
                    bundleId: bundleId,
                    environment: environment,
                    at: range.from,
                    on: db
                )
            )
        }
        let (daily, subscriptionStarts, trials, atEnd) = try await moneyAndStarts
        let (subscriptionEnds, atStart) = try await endsAndActive
        for figure in daily {
            guard let place = index(figure.day) else { continue }
            if figure.measure == .renewal {
                periods[place].movements.renewals += Int(figure.amount)
                movements.renewals += Int(figure.amount)
                continue
            }
            periods[place].money[figure.currency, default: .init()].add(figure)
            money[figure.currency, default: .init()].add(figure)
        }
        for row in subscriptionStarts {
            guard let place = index(row.day) else { continue }
            periods[place].movements.started += row.started
            periods[place].movements.trials += row.trials
            movements.started += row.started
            movements.trials += row.trials
        }
        for row in subscriptionEnds {
            guard let place = index(row.day) else { continue }
            periods[place].movements.expired += row.ended
            periods[place].movements.churned += row.churned
            movements.expired += row.ended
            movements.churned += row.churned
        }
        func active(_ rows: [FigureStore.ActiveSubscriptions], at instant: Int64) -> FiguresOverview.Active {
            var active = FiguresOverview.Active(at: instant)
            for row in rows {
                active.subscriptions += row.subscriptions
                if let currency = row.currency, let monthly = row.monthly, monthly != 0 {
                    active.monthly[currency, default: 0] += monthly
                }
            }
            return active
        }
        return FiguresOverview(
            bundleId: bundleId,
            environment: environment,
            from: fromDay * day,
            to: toDay * day,
            bucket: bucket,
            periods: periods,
            money: money,
            movements: movements,
            activeAtStart: active(atStart, at: fromDay * day),
            activeAtEnd: active(atEnd, at: min(toDay * day, now)),
            trialsEnded: trials.ended,
            trialsConverted: trials.converted
        )
    }

    /// The first day of each period from `fromDay` to `toDay`: every day, each Monday (ISO weeks), or each first of a
    /// month (UTC), the first period starting at `fromDay` whatever its weekday or date.
    static func periodStarts(fromDay: Int64, toDay: Int64, bucket: FiguresOverview.Bucket) -> [Int64] {
        guard fromDay < toDay else { return [fromDay] }
        var starts: [Int64] = [fromDay]
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        var next = fromDay
        while true {
            switch bucket {
            case .day:
                next += 1
            case .week:
                // 1970-01-01 was a Thursday: day 4 was a Monday.
                next = next + 7 - ((next - 4) % 7 + 7) % 7
            case .month:
                let date = Date(timeIntervalSince1970: Double(next) * 86_400)
                let parts = calendar.dateComponents([.year, .month], from: date)
                let first = calendar.date(
                    from: DateComponents(year: parts.year, month: (parts.month ?? 1) + 1, day: 1)
                )!
                next = Int64(first.timeIntervalSince1970 / 86_400)
            }
            guard next < toDay else { return starts }
            starts.append(next)
        }
    }
}

extension FiguresOverview.Money {
    mutating func add(_ figure: FigureStore.DailyFigure) {
        revenue += figure.amount
        entries += figure.entries
        if figure.measure == .refund {
            refunds += figure.amount
            refundCount += figure.entries
        }
    }
}
