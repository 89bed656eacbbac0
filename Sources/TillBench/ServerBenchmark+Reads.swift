import AsyncHTTPClient
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import SQLKit
import ServiceLifecycle
import TillAppStore
import TillCatalogue
import TillContract
import TillCore
import TillDevelopment
import TillFormats
import TillLedger
import TillServer
import TillSimulator
import TillStorage

extension ServerBenchmark {
    // MARK: Statement costs

    /// What one statement costs through sql-kit: wall time and this process's CPU per statement, for a
    /// trivial read, a one-row read by key, and a write transaction of one insert.
    public static func database(_ options: Options) async throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("till-db-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try await TillDatabase.open(
            try DatabaseConfiguration(
                parsing: options.databaseURL ?? directory.appendingPathComponent("db.sqlite").path
            )
        )
        try await database.sql.raw("DROP TABLE IF EXISTS bench_rows").run()
        try await database.sql.raw("CREATE TABLE bench_rows (id TEXT PRIMARY KEY, value BIGINT NOT NULL)").run()
        let count = 2000 * options.seconds
        var lines: [String] = []
        func measure(_ name: String, _ body: @escaping @Sendable (Int) async throws -> Void) async throws {
            let clock = ContinuousClock()
            let cpu = processCPUSeconds()
            let start = clock.now
            for index in 0..<count { try await body(index) }
            let wall = Double((clock.now - start).nanoseconds) / 1e3 / Double(count)
            let used = (processCPUSeconds() - cpu) * 1e6 / Double(count)
            lines.append(String(format: "database %@ wall_us=%.0f cpu_us=%.0f", name, wall, used))
        }
        try await measure("select-1") { _ in _ = try await database.sql.raw("SELECT 1 AS n").first() }
        try await measure("insert-transaction") { index in
            try await database.transaction { db in
                try await db.raw("INSERT INTO bench_rows (id, value) VALUES (\(bind: "r\(index)"), \(bind: index))")
                    .run()
            }
        }
        try await measure("select-by-key") { index in
            _ = try await database.sql.raw("SELECT value FROM bench_rows WHERE id = \(bind: "r\(index)")").first()
        }
        let inSession = try await database.transaction { db in
            let clock = ContinuousClock()
            let cpu = processCPUSeconds()
            let start = clock.now
            for index in 0..<count {
                _ = try await db.raw("SELECT value FROM bench_rows WHERE id = \(bind: "r\(index)")").first()
            }
            let wall = Double((clock.now - start).nanoseconds) / 1e3 / Double(count)
            let used = (processCPUSeconds() - cpu) * 1e6 / Double(count)
            return String(format: "database select-by-key-in-one-transaction wall_us=%.0f cpu_us=%.0f", wall, used)
        }
        lines.append(inSession)
        try await database.sql.raw("DROP TABLE bench_rows").run()
        try await database.shutdown()
        return lines.joined(separator: "\n")
    }

    // MARK: Entitlement reads

    /// Customer reads (`GET /v1/customers/{id}`: entitlements, balances, purchases) as fast as they go, beside
    /// a bare Hummingbird route answering a constant, with the same client, in the same run.
    public static func reads(_ options: Options) async throws -> String {
        var report = ""
        try await withServers(options, faults: []) { server, simulator, demo, port in
            let customers = 100
            say("preparing \(customers) customers, each with a confirmed purchase…")
            let app = try await server.catalogue.app(bundleId: demo.bundleId)
            for index in 0..<customers {
                // Each customer with an App Store account of their own: on one shared account every purchase of
                // pro would be one purchase, which the app's restore policy gives to its first customer alone.
                let account = try await simulator.appStoreConnect.createAccount(AccountInput(environment: "Sandbox"))
                let device = try await simulator.appStoreConnect.createDevice(accountId: account.id, DeviceInput())
                let purchase = try await simulator.payments.addPayment(
                    PaymentRequest(deviceId: device.id, bundleId: demo.bundleId, productId: "pro"),
                    environment: .sandbox
                )
                _ = try await server.intake.submit(
                    SubmissionRequest(customerId: "reader-\(index)", signedTransaction: purchase.signedTransaction),
                    app: app
                )
            }
            var quiet = Logger(label: "till.bench.bare")
            quiet.logLevel = .warning
            let bareRouter = Router()
            bareRouter.get("/bare") { _, _ in #"{"entitlements":[]}"# }
            let bare = try await Ports.start(
                { report in
                    Application(
                        router: bareRouter,
                        configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                        onServerRunning: { channel in await report(channel.localAddress?.port ?? 0) },
                        logger: quiet
                    )
                },
                logger: quiet
            )
            let client = makeClient(connections: options.connections)
            // The three targets take turns a second at a time, so that what the shared machine does meanwhile (a
            // neighbour's burst, steal) falls on each alike; each target's figures are its seconds together.
            let targets: [@Sendable (Int) -> String] = [
                { _ in "http://127.0.0.1:\(bare.port)/bare" },
                // Till's cheapest route (`/health`: its middleware, no app key, no customer): what of the gap is
                // the server's stack, and what the customer read.
                { _ in "http://127.0.0.1:\(port)/health" },
                { index in "http://127.0.0.1:\(port)/v1/customers/reader-\(index % customers)" },
            ]
            var samples = Array(repeating: LoopSample(), count: targets.count)
            for _ in 0..<max(1, options.seconds) {
                for (index, url) in targets.enumerated() {
                    samples[index].add(
                        try await closedLoop(
                            client: client,
                            connections: options.connections,
                            duration: .seconds(1),
                            appKey: demo.appKey,
                            url: url
                        )
                    )
                }
            }
            let (baseline, health, customerReads) = (samples[0].result, samples[1].result, samples[2].result)
            try await client.shutdown()
            await bare.stop()
            report = """
                bare_route reads_per_sec=\(baseline.rate) p50_ms=\(ms(baseline.p50)) p99_ms=\(ms(baseline.p99)) \
                errors=\(baseline.errors)
                till_health reads_per_sec=\(health.rate) p50_ms=\(ms(health.p50)) p99_ms=\(ms(health.p99)) \
                errors=\(health.errors) \
                ratio_to_bare=\(String(format: "%.2f", Double(health.rate) / Double(max(1, baseline.rate))))
                customer_reads reads_per_sec=\(customerReads.rate) p50_ms=\(ms(customerReads.p50)) \
                p99_ms=\(ms(customerReads.p99)) errors=\(customerReads.errors) \
                ratio_to_bare=\(String(format: "%.2f", Double(customerReads.rate) / Double(max(1, baseline.rate)))) \
                connections=\(options.connections)
                """
        }
        return report
    }

    struct LoopResult {
        var rate: Int
        var p50: Duration
        var p99: Duration
        var errors: Int
    }

    /// What callers saw over one or more periods: their latencies, errors and time, added up.
    struct LoopSample {
        var latencies = LatencyHistogram()
        var errors = 0
        var elapsed = Duration.zero

        mutating func add(_ other: LoopSample) {
            latencies.add(other.latencies)
            errors += other.errors
            elapsed += other.elapsed
        }

        var result: LoopResult {
            LoopResult(
                rate: Int(Double(latencies.count) / max(1e-9, Double(elapsed.nanoseconds) / 1e9)),
                p50: latencies.percentile(0.5),
                p99: latencies.percentile(0.99),
                errors: errors
            )
        }
    }

    /// `connections` callers, each sending its next request when the last is answered, for `duration`.
    static func closedLoop(
        client: HTTPClient,
        connections: Int,
        duration: Duration,
        appKey: String,
        url: @escaping @Sendable (Int) -> String
    ) async throws -> LoopSample {
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + duration
        let results = try await withThrowingTaskGroup(of: (LatencyHistogram, Int).self) { group in
            for caller in 0..<connections {
                group.addTask {
                    var latencies = LatencyHistogram()
                    var errors = 0
                    var index = caller
                    while clock.now < deadline {
                        var request = HTTPClientRequest(url: url(index))
                        request.headers.add(name: "Authorization", value: "Bearer \(appKey)")
                        let sent = clock.now
                        do {
                            let response = try await client.execute(request, timeout: .seconds(10))
                            _ = try await response.body.collect(upTo: 1 << 20)
                            if response.status == .ok { latencies.record(clock.now - sent) } else { errors += 1 }
                        } catch {
                            errors += 1
                        }
                        index += connections
                    }
                    return (latencies, errors)
                }
            }
            var all = LatencyHistogram()
            var errors = 0
            for try await (latencies, failed) in group {
                all.add(latencies)
                errors += failed
            }
            return (all, errors)
        }
        return LoopSample(latencies: results.0, errors: results.1, elapsed: clock.now - start)
    }

    // MARK: Helpers

    static func makeClient(connections: Int) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60),
            concurrentHTTP1ConnectionsPerHostSoftLimit: connections
        )
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    static func ms(_ duration: Duration) -> String { String(format: "%.2f", Double(duration.nanoseconds) / 1e6) }
    static func seconds(_ duration: Duration) -> String { String(format: "%.1f", Double(duration.nanoseconds) / 1e9) }
}
