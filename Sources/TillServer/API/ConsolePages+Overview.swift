import Foundation
import Hummingbird
import NIOCore
import TillCatalogue
import TillConsole
import TillCore
import TillHTTPKit
import TillLedger

/// The overview: an app's figures over a range of days (`Figures.overview`), charts drawn on the server, a table by
/// period, the sandbox apart, and the same figures as CSV.
extension ConsolePages {
    /// What the overview's form asked: the range (days, `to` included), the period, the environment.
    struct OverviewQuery {
        var from: Int64
        /// The day after the last one shown (excluded).
        var to: Int64
        var bucket: FiguresOverview.Bucket
        var environment: AppStoreEnvironment

        /// The longest range one page reads (a little over three years).
        static let longest: Int64 = 1_100

        init(_ request: Request, now: Int64) throws {
            let day = FigureChange.dayLength
            let query = request.uri.queryParameters
            let today = FigureChange.day(of: now) * day
            let last =
                try query.get("to").map {
                    guard let day = Readable.day(String($0)) else {
                        throw TillHTTPError.badRequest("invalidRange", "to is a date (2026-11-01)")
                    }
                    return day
                } ?? today
            let first =
                try query.get("from").map {
                    guard let day = Readable.day(String($0)) else {
                        throw TillHTTPError.badRequest("invalidRange", "from is a date (2026-11-01)")
                    }
                    return day
                } ?? last - 29 * day
            guard first <= last else { throw TillHTTPError.badRequest("invalidRange", "from is on or before to") }
            guard (last - first) / day < Self.longest else {
                throw TillHTTPError.badRequest("invalidRange", "a range is at most \(Self.longest) days")
            }
            from = first
            to = last + day
            let days = (to - from) / day
            if let text = query.get("bucket") {
                guard let bucket = FiguresOverview.Bucket(rawValue: String(text)) else {
                    throw TillHTTPError.badRequest("invalidBucket", "by is day, week or month")
                }
                self.bucket = bucket
            } else {
                bucket = days <= 62 ? .day : days <= 370 ? .week : .month
            }
            if let text = query.get("environment") {
                guard let environment = AppStoreEnvironment.known.first(where: { $0.rawValue == String(text) }) else {
                    throw TillHTTPError.badRequest("invalidEnvironment", "environment is Production, Sandbox or Xcode")
                }
                self.environment = environment
            } else {
                environment = .production
            }
        }

        func parameters(app: String) -> String {
            Readable.query([
                ("app", app), ("from", Readable.date(from)), ("to", Readable.date(to - FigureChange.dayLength)),
                ("bucket", bucket.rawValue), ("environment", environment.rawValue),
            ])
        }
    }

    /// The figures of `app` that `query` asks for: its window, period and environment.
    func figures(of app: ServerApp, _ query: OverviewQuery) async throws -> FiguresOverview {
        try await server.figures.overview(
            bundleId: app.bundleId,
            environment: query.environment,
            from: query.from,
            to: query.to,
            bucket: query.bucket
        )
    }

    func overview(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let section = try await self.section("/console/overview", request, context)
        guard let app = section.app else { return section.noApp }
        do {
            let query = try OverviewQuery(request, now: server.nowMilliseconds)
            let figures = try await self.figures(of: app, query)
            var page = section.common
            page.merge(overviewContext(figures, query: query, app: app)) { $1 }
            if query.environment == .production {
                var apart = query
                apart.environment = .sandbox
                let sandbox = try await self.figures(of: app, apart)
                page["sandbox"] =
                    [
                        "money": sandbox.currencies.map { currency -> [String: Any] in
                            ["currency": currency, "revenue": Readable.money(sandbox.money[currency]?.revenue ?? 0)]
                        },
                        "started": Readable.grouped(sandbox.movements.started),
                        "renewals": Readable.grouped(sandbox.movements.renewals),
                        "active": Readable.grouped(sandbox.activeAtEnd.subscriptions),
                        "href": "/console/overview?" + apart.parameters(app: app.bundleId),
                    ] as [String: Any]
            }
            return ConsolePage.html("overview", page)
        } catch {
            guard let error = TillHTTPError.refusal(error) else { throw error }
            return section.failure(error)
        }
    }

    /// The overview's figures, charts and table, written for people.
    func overviewContext(_ figures: FiguresOverview, query: OverviewQuery, app: ServerApp) -> [String: Any] {
        let labels = figures.periods.map { period(figures.bucket, $0.start) }
        var charts: [[String: Any]] = []
        for (index, currency) in figures.currencies.enumerated() {
            let chart = SVGChart(
                id: "revenue-\(currency.lowercased())",
                title: "Revenue in \(currency) by \(figures.bucket.rawValue)",
                labels: labels,
                series: [
                    SVGChart.Series(
                        name: "Revenue (\(currency))",
                        values: figures.periods.map { $0.money[currency]?.revenue ?? 0 },
                        color: SVGChart.palette[index % SVGChart.palette.count]
                    )
                ],
                format: Readable.money
            )
            charts.append([
                "svg": chart.svg,
                "caption": "Revenue in \(currency): purchases less refunds (a prorated refund by its share).",
            ])
        }
        let movements = SVGChart(
            id: "subscriptions",
            title: "Subscriptions by \(figures.bucket.rawValue)",
            labels: labels,
            series: [
                SVGChart.Series(
                    name: "New",
                    values: figures.periods.map { Int64($0.movements.started) },
                    color: SVGChart.palette[0]
                ),
                SVGChart.Series(
                    name: "Renewals",
                    values: figures.periods.map { Int64($0.movements.renewals) },
                    color: SVGChart.palette[1]
                ),
                SVGChart.Series(
                    name: "Expired",
                    values: figures.periods.map { Int64($0.movements.expired) },
                    color: SVGChart.palette[2]
                ),
            ],
            format: { Readable.grouped($0) }
        )
        charts.append(["svg": movements.svg, "caption": "New subscriptions, renewals and expirations."])
        let now = server.nowMilliseconds
        let endLabel = figures.activeAtEnd.at >= now - 1000 ? "now" : "at the end, \(Readable.date(figures.to))"
        return [
            "fromDate": Readable.date(figures.from),
            "toDate": Readable.date(figures.to - FigureChange.dayLength),
            "bucket": figures.bucket.rawValue,
            "environmentLabel": figures.environment == .production
                ? "Production" : "\(figures.environment.rawValue) (not revenue)",
            "testEnvironment": figures.environment != .production,
            "buckets": FiguresOverview.Bucket.allCases.map {
                ["value": $0.rawValue, "label": $0.rawValue.capitalized, "selected": $0 == figures.bucket]
            },
            "environments": [AppStoreEnvironment.production, .sandbox, .xcode].map {
                ["value": $0.rawValue, "label": $0.rawValue, "selected": $0 == figures.environment]
            },
            "csvHref": "/console/overview.csv?" + query.parameters(app: app.bundleId),
            "currencies": figures.currencies.map { currency -> [String: Any] in
                let money = figures.money[currency] ?? .init()
                return [
                    "currency": currency,
                    "revenue": Readable.money(money.revenue),
                    "entries": Readable.grouped(money.entries),
                    "refunds": Readable.money(money.refunds),
                    "refundCount": Readable.grouped(money.refundCount),
                ]
            },
            "mrr": figures.activeAtEnd.monthly.sorted { $0.key < $1.key }.map {
                ["currency": $0.key, "amount": Readable.money($0.value), "at": endLabel]
            },
            "activeAtEnd": Readable.grouped(figures.activeAtEnd.subscriptions),
            "activeAt": endLabel,
            "activeAtStart": Readable.grouped(figures.activeAtStart.subscriptions),
            "started": Readable.grouped(figures.movements.started),
            "trials": Readable.grouped(figures.movements.trials),
            "renewals": Readable.grouped(figures.movements.renewals),
            "expired": Readable.grouped(figures.movements.expired),
            "churned": Readable.grouped(figures.movements.churned),
            "churnRate": Readable.percent(
                figures.activeAtStart.subscriptions == 0
                    ? nil : Double(figures.movements.churned) / Double(figures.activeAtStart.subscriptions)
            ),
            "conversion": Readable.percent(figures.trialConversion),
            "converted": Readable.grouped(figures.trialsConverted),
            "trialsEnded": Readable.grouped(figures.trialsEnded),
            "charts": charts,
            "rows": zip(labels, figures.periods).map { label, period -> [String: Any] in
                [
                    "label": label,
                    "money": figures.currencies.map { Readable.money(period.money[$0]?.revenue ?? 0) },
                    "started": Readable.grouped(period.movements.started),
                    "renewals": Readable.grouped(period.movements.renewals),
                    "expired": Readable.grouped(period.movements.expired),
                ]
            },
        ]
    }

    /// A period's name: `2026-11-22`, `week of 2026-11-16`, `2026-11`.
    func period(_ bucket: FiguresOverview.Bucket, _ start: Int64) -> String {
        switch bucket {
        case .day: Readable.date(start)
        case .week: "wk " + Readable.date(start)
        case .month: String(Readable.date(start).prefix(7))
        }
    }

    /// The overview as CSV, one figure per line (`period,environment,figure,currency,value`): money in the currency's
    /// units with three decimals (the books' milliunits), counts as integers.
    func overviewCSV(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let (app, _) = try await self.apps(request, context)
        guard let app else { throw TillHTTPError.notFound("app", request.uri.queryParameters.get("app") ?? "") }
        let query = try OverviewQuery(request, now: server.nowMilliseconds)
        let figures = try await self.figures(of: app, query)
        var lines = ["period,environment,figure,currency,value"]
        let environment = figures.environment.rawValue
        func amount(_ milliunits: Int64) -> String {
            let sign = milliunits < 0 ? "-" : ""
            let value = abs(milliunits)
            let fraction = String(value % 1000)
            return "\(sign)\(value / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
        }
        for period in figures.periods {
            let name = Readable.date(period.start)
            for currency in period.money.keys.sorted() {
                let money = period.money[currency] ?? .init()
                lines.append("\(name),\(environment),revenue,\(currency),\(amount(money.revenue))")
                lines.append("\(name),\(environment),entries,\(currency),\(money.entries)")
                lines.append("\(name),\(environment),refunds,\(currency),\(amount(money.refunds))")
                lines.append("\(name),\(environment),refundCount,\(currency),\(money.refundCount)")
            }
            let counts = [
                ("newSubscriptions", period.movements.started), ("trialStarts", period.movements.trials),
                ("renewals", period.movements.renewals), ("expired", period.movements.expired),
                ("churned", period.movements.churned),
            ]
            for (figure, value) in counts { lines.append("\(name),\(environment),\(figure),,\(value)") }
        }
        let end = Readable.date(figures.activeAtEnd.at)
        lines.append(
            "\(Readable.date(figures.from)),\(environment),activeSubscriptions,,\(figures.activeAtStart.subscriptions)"
        )
        lines.append("\(end),\(environment),activeSubscriptions,,\(figures.activeAtEnd.subscriptions)")
        for (currency, monthly) in figures.activeAtEnd.monthly.sorted(by: { $0.key < $1.key }) {
            lines.append("\(end),\(environment),mrr,\(currency),\(amount(monthly))")
        }
        lines.append("\(Readable.date(figures.from)),\(environment),trialsEnded,,\(figures.trialsEnded)")
        lines.append("\(Readable.date(figures.from)),\(environment),trialsConverted,,\(figures.trialsConverted)")
        var response = Response(
            status: .ok,
            body: .init(byteBuffer: ByteBuffer(string: lines.joined(separator: "\n") + "\n"))
        )
        response.headers[.contentType] = "text/csv; charset=utf-8"
        response.headers[.contentDisposition] =
            "attachment; filename=\"till-\(app.bundleId)-\(Readable.date(figures.from))-\(Readable.date(figures.to - FigureChange.dayLength)).csv\""
        ConsolePage.headers(&response)
        return response
    }
}
