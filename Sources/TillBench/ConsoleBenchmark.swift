import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import SQLKit
import TillAppStore
import TillCore
import TillDevelopment
import TillFormats
import TillLedger
import TillServer
import TillStorage

/// `till bench ledger` writes a big ledger (`LedgerGenerator`); `till bench console` serves the console on it and
/// times every page, signed in as an operator would be, one request at a time.
public enum ConsoleBenchmark {
    /// Writes a ledger of `shape` into a new SQLite file (or an empty PostgreSQL database).
    public static func generate(databaseURL: String, shape: LedgerGenerator.Shape) async throws -> String {
        var quiet = Logger(label: "till.bench.ledger")
        quiet.logLevel = .warning
        let server = try await PurchaseServer.open(
            ServerConfiguration(database: try DatabaseConfiguration(parsing: databaseURL), operatorToken: "bench"),
            logger: quiet
        )
        let written: LedgerGenerator.Written
        do {
            written = try await LedgerGenerator(shape).write(into: server) { say("  \($0)") }
        } catch {
            try? await server.shutdown()
            throw error
        }
        try await server.shutdown()
        return "ledger \(written)"
    }

    /// The console's pages on the ledger at `databaseURL`, each asked `iterations` times after two warm-ups: the
    /// median, 95th percentile and slowest answer, measured by the client on loopback.
    public static func pages(databaseURL: String, iterations: Int) async throws -> String {
        var quiet = Logger(label: "till.bench.console")
        quiet.logLevel = .warning
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "till-console-\(UUID().uuidString)"
        )
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PurchaseServer.open(
            ServerConfiguration(
                database: try DatabaseConfiguration(parsing: databaseURL),
                operatorToken: "bench",
                // Nothing here asks Apple: an address that refuses at once.
                apple: .simulator("http://127.0.0.1:9"),
                catchUp: CatchUpSettings(interval: .zero),
                contentDirectory: directory.appendingPathComponent("content").path
            ),
            logger: quiet
        )
        let port = try await Ports.start(
            { buildServerApplication(server, port: 0, onServerRunning: $0) },
            logger: quiet
        )
        // Redirects are the console's answers (a form's 303), not to be followed.
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: HTTPClient.Configuration(redirectConfiguration: .disallow)
        )
        var report: [String] = []
        do {
            let base = "http://127.0.0.1:\(port.port)"
            let cookie = try await signIn(client, base: base)
            let targets = try await Targets.pick(server.database)
            let app = "app=" + LedgerGenerator.bundleId
            let today = String(ReceiptDate.formatRFC3339(Date()).prefix(10))
            func daysAgo(_ days: Int) -> String {
                String(ReceiptDate.formatRFC3339(Date().addingTimeInterval(-Double(days) * 86_400)).prefix(10))
            }
            let pages: [(String, String)] = [
                ("overview (30 days by day)", "/console/overview?\(app)"),
                ("overview (a year by week)", "/console/overview?\(app)&from=\(daysAgo(364))&to=\(today)&bucket=week"),
                (
                    "overview (3 years by month)",
                    "/console/overview?\(app)&from=\(daysAgo(1095))&to=\(today)&bucket=month"
                ),
                (
                    "overview, sandbox (a year)",
                    "/console/overview?\(app)&from=\(daysAgo(364))&to=\(today)&environment=Sandbox"
                ),
                (
                    "overview CSV (a year by day)",
                    "/console/overview.csv?\(app)&from=\(daysAgo(364))&to=\(today)&bucket=day"
                ),
                ("customers: search by id prefix", "/console/customers?\(app)&q=customer-00012"),
                ("customers: search by transaction id", "/console/customers?\(app)&q=\(targets.transactionId)"),
                ("customers: search by original id", "/console/customers?\(app)&q=\(targets.originalTransactionId)"),
                ("customers: search by guest id", "/console/customers?\(app)&q=device-\(targets.customer)"),
                ("customer (busiest: \(targets.count) purchases)", "/console/customers/\(targets.customer)?\(app)"),
                ("queue (dead-lettered)", "/console/queue?\(app)&state=deadLettered"),
                ("queue (retrying)", "/console/queue?\(app)&state=retrying"),
                ("health", "/console/health?\(app)"),
                ("notifications", "/console/notifications?\(app)"),
                ("notifications (REFUND)", "/console/notifications?\(app)&type=REFUND"),
                ("notification", "/console/notifications/\(targets.notification)?\(app)"),
                ("catalogue", "/console/catalogue?\(app)"),
                ("product", "/console/catalogue/premium.monthly?\(app)"),
                ("apps", "/console/apps?\(app)"),
                ("app", "/console/apps/\(LedgerGenerator.bundleId)"),
                ("activity", "/console/activity?\(app)"),
            ]
            report.append(
                "console pages on \(targets.transactions) transactions, \(targets.customers) customers; \(iterations) "
                    + "requests each, one at a time (ms, measured by the client on loopback)"
            )
            for (name, path) in pages {
                var times = LatencyHistogram()
                var bytes = 0
                for round in 0..<(iterations + 2) {
                    let clock = ContinuousClock()
                    let start = clock.now
                    var request = HTTPClientRequest(url: base + path)
                    request.headers.add(name: "Cookie", value: cookie)
                    let response = try await client.execute(request, timeout: .seconds(60))
                    let body = try await response.body.collect(upTo: 64 << 20)
                    let elapsed = clock.now - start
                    guard response.status == .ok || response.status == .seeOther else {
                        throw BenchmarkFailure("\(path) answered \(response.status.code)")
                    }
                    bytes = body.readableBytes
                    if round >= 2 {
                        times.record(elapsed)
                    }
                }
                report.append(
                    String(
                        format: "%-40@ p50_ms=%7.1f p95_ms=%7.1f max_ms=%7.1f bytes=%d",
                        name as NSString,
                        times.milliseconds(0.5),
                        times.milliseconds(0.95),
                        times.maxMilliseconds,
                        bytes
                    )
                )
            }
        } catch {
            try? await client.shutdown()
            await port.stop()
            try? await server.shutdown()
            throw error
        }
        try await client.shutdown()
        await port.stop()
        try await server.shutdown()
        return report.joined(separator: "\n")
    }

    /// Signs in with the operator token and answers the session's cookie.
    static func signIn(_ client: HTTPClient, base: String) async throws -> String {
        let page = try await client.execute(HTTPClientRequest(url: base + "/console/sign-in"), timeout: .seconds(30))
        let html = String(buffer: try await page.body.collect(upTo: 1 << 20))
        guard let pairing = page.headers["Set-Cookie"].first?.split(separator: ";").first,
            let range = html.range(of: #"name="csrf" value=""#),
            let end = html[range.upperBound...].firstIndex(of: "\"")
        else { throw BenchmarkFailure("the sign-in page has no form") }
        var request = HTTPClientRequest(url: base + "/console/sign-in")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Cookie", value: String(pairing))
        request.body = .bytes(ByteBuffer(string: "csrf=\(html[range.upperBound..<end])&token=bench"))
        let answer = try await client.execute(request, timeout: .seconds(30))
        guard answer.status == .seeOther,
            let session = answer.headers["Set-Cookie"].first(where: { $0.hasPrefix("till_console=") })?
                .split(separator: ";").first
        else { throw BenchmarkFailure("signing in answered \(answer.status.code)") }
        return String(session)
    }

    /// What the pages are asked about: the busiest customer, a transaction, a notification.
    struct Targets {
        var customer: String
        var count: Int
        var transactionId: String
        var originalTransactionId: String
        var notification: String
        var transactions: Int
        var customers: Int

        /// Read once, before timing: the ledger's landmarks from its bulk path, a notification from the server's log.
        static func pick(_ database: TillDatabase) async throws -> Targets {
            guard let landmarks = try await LedgerBulkLoad.landmarks(on: database.sql) else {
                throw BenchmarkFailure("the ledger has no customer with a renewal")
            }
            guard
                let notification = try await database.sql.raw("SELECT notification_uuid FROM srv_notifications LIMIT 1")
                    .first()
            else { throw BenchmarkFailure("the ledger has no notification") }
            return Targets(
                customer: landmarks.busiestCustomer,
                count: landmarks.busiestCustomersTransactions,
                transactionId: landmarks.renewal.transactionId,
                originalTransactionId: landmarks.renewal.originalTransactionId,
                notification: try notification.decode(column: "notification_uuid", as: String.self),
                transactions: landmarks.transactions,
                customers: landmarks.customers
            )
        }
    }
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
