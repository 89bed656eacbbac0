import Foundation
import Hummingbird
import Logging
import NIOHTTP1
import ServiceLifecycle
import TillContract
import TillCore
import TillDevelopment
import TillFormats
import TillLedger
import TillServer
import TillSimulator
import TillStorage
import TillWebhooks

#if canImport(Glibc)
    import Glibc
#endif

/// Events to the app's backend under load (`till bench events`, docs/benchmarks.md):
///
/// 1. **CPU per purchase, without and with one endpoint**: runs of `purchases` signed transactions sent to the server
///    at `rate`, alternating: without an endpoint (each purchase still writes its event), with one endpoint taking
///    every event (made before the run, deleted with its deliveries after it), without, … — `rounds` runs with the
///    endpoint between `rounds + 1` without. A run's figure is the process's CPU time (`getrusage`) from its first
///    request until a fixed time after its last acknowledgement (with the endpoint: after its last delivery), divided
///    by its purchases. What the endpoint adds in a round is its run's figure less the mean of the runs just before
///    and after it (which shows what the growing database and the machine's drift did meanwhile); the result is the
///    median over the rounds. Each purchase is a customer's first, and Apple is left out (no confirmation worker runs),
///    so every run does the same work besides.
/// 2. **Events delivered per second**: `events` events recorded while the endpoint is paused, for `customers`
///    customers, then the endpoint enabled and the time until the last is delivered.
///
/// "Delivered" is counted by the receiver (the server is not asked while it is measured). The receiver runs in a
/// process of its own (`till bench receiver`), so the server's CPU time is the server's (and
/// the in-process load generator's, the same in both runs); the receiver reports its own.
public enum EventBenchmark {
    public struct Options: Sendable {
        var purchases: Int
        var rounds: Int
        var rate: Int
        var events: Int
        var customers: Int
        var connections: Int
        var databaseURL: String?
        /// The webhook settings' batch window and batch per endpoint (their defaults when nil).
        var batchWindow: Duration?
        var batchPerEndpoint: Int?

        public init(
            purchases: Int,
            rounds: Int,
            rate: Int,
            events: Int,
            customers: Int,
            connections: Int,
            databaseURL: String?,
            batchWindow: Duration? = nil,
            batchPerEndpoint: Int? = nil
        ) {
            self.purchases = purchases
            self.rounds = rounds
            self.rate = rate
            self.events = events
            self.customers = customers
            self.connections = connections
            self.databaseURL = databaseURL
            self.batchWindow = batchWindow
            self.batchPerEndpoint = batchPerEndpoint
        }

        /// The server's webhook settings: deliveries to the receiver on loopback, batches as asked.
        var webhooks: WebhookSettings {
            var settings = WebhookSettings(allowHTTPToLoopback: true)
            if let batchWindow { settings.batchWindow = batchWindow }
            if let batchPerEndpoint { settings.batchPerEndpoint = max(1, batchPerEndpoint) }
            return settings
        }
    }

    public static func run(_ options: Options) async throws -> String {
        var quiet = Logger(label: "till.bench")
        quiet.logLevel = .warning
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("till-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let simulator = try await Simulator.open(SimulatorConfiguration(), logger: quiet)
        let server = try await PurchaseServer.open(
            ServerConfiguration(
                database: try DatabaseConfiguration(
                    parsing: options.databaseURL ?? directory.appendingPathComponent("till.sqlite").path
                ),
                operatorToken: "bench",
                sandboxJWSRoots: [simulator.signer.jwsAuthority.root],
                contentDirectory: directory.appendingPathComponent("content").path,
                webhooks: options.webhooks
            ),
            logger: quiet
        )
        let demo = try await DevelopmentSetup.prepare(server: server, simulator: simulator)
        let runs = 2 * options.rounds + 1
        say("preparing \(runs * options.purchases) signed purchases…")
        let bodies = try await purchases(runs * options.purchases, simulator, demo)
        let receiver = try EventReceiverProcess.Driver.start()
        // The server's HTTP API and its webhook worker; no confirmation worker: Apple is not part of this figure.
        let serverPort = try await Ports.start(
            { report in
                var application = Application(
                    router: buildServerRouter(server),
                    configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                    onServerRunning: { await report($0.localAddress?.port ?? 0) },
                    logger: quiet
                )
                application.addServices(WebhookWorker(server: server))
                return application
            },
            logger: quiet
        )
        let webhooks = options.webhooks
        var lines = [
            "webhooks batch_window_ms=\(Int(webhooks.batchWindow / .milliseconds(1))) batch_per_endpoint=\(webhooks.batchPerEndpoint) "
                + "concurrency_per_endpoint=\(webhooks.concurrencyPerEndpoint)"
        ]
        do {
            let port = serverPort.port
            lines += try await purchaseRounds(
                bodies,
                port: port,
                demo: demo,
                server: server,
                receiver: receiver,
                options
            )
            // 2. A backlog: recorded for a paused endpoint, then delivered as fast as the worker can.
            let paused = try await server.webhookEndpoints.create(
                bundleId: demo.bundleId,
                .init(url: "http://127.0.0.1:\(receiver.port)/till/events", enabled: false)
            )
            say("recording \(options.events) events for \(options.customers) customers, the endpoint paused…")
            let clock = ContinuousClock()
            let recordStart = clock.now
            let recordCPU = processCPUSeconds()
            try await record(options.events, customers: options.customers, server: server, bundleId: demo.bundleId)
            let recording = clock.now - recordStart
            let recordingCPU = processCPUSeconds() - recordCPU
            let beforeBacklog = try receiver.sample()
            say("delivering the backlog…")
            let start = clock.now
            let cpuAtStart = processCPUSeconds()
            _ = try await server.webhookEndpoints.update(
                bundleId: demo.bundleId,
                id: paused.endpoint.id,
                .init(enabled: true)
            )
            while try receiver.sample().count < beforeBacklog.count + options.events {
                guard clock.now - start < .seconds(600) else { throw BenchmarkTimeout() }
                try await Task.sleep(for: .milliseconds(20))
            }
            let elapsed = seconds(clock.now - start)
            let cpu = processCPUSeconds() - cpuAtStart
            let afterBacklog = try receiver.sample()
            lines.append(
                "backlog events=\(options.events) customers=\(options.customers) recorded_in_s=\(format(seconds(recording))) "
                    + "recorded_per_s=\(Int(Double(options.events) / seconds(recording))) recording_cpu_per_event_ms=\(format(recordingCPU * 1000 / Double(options.events), 3)) "
                    + "delivered_in_s=\(format(elapsed)) delivered_per_s=\(Int(Double(options.events) / elapsed)) "
                    + "server_cpu_per_event_ms=\(format(cpu * 1000 / Double(options.events), 3)) "
                    + "receiver_cpu_per_event_ms=\(format((afterBacklog.cpu - beforeBacklog.cpu) * 1000 / Double(options.events), 3))"
            )
        } catch {
            await serverPort.stop()
            receiver.stop()
            try? await server.shutdown()
            try? await simulator.shutdown()
            throw error
        }
        await serverPort.stop()
        receiver.stop()
        try await server.shutdown()
        try await simulator.shutdown()
        return lines.joined(separator: "\n")
    }

    /// The runs without and with an endpoint, alternating (without, with, without, …, without): each run's CPU per
    /// purchase, and what each run with the endpoint adds to the mean of the runs just before and after it. Answers
    /// the result lines.
    static func purchaseRounds(
        _ bodies: [[UInt8]],
        port: Int,
        demo: DevelopmentSetup.Demo,
        server: PurchaseServer,
        receiver: EventReceiverProcess.Driver,
        _ options: Options
    ) async throws -> [String] {
        let size = options.purchases
        // What the process spends idle (its workers' timers), for reading the figures below: every run's window holds
        // `settle` of it.
        let idleStart = processCPUSeconds()
        try await Task.sleep(for: .seconds(2))
        let idle = (processCPUSeconds() - idleStart) / 2
        var without: [Double] = []
        var with: [Double] = []
        var delivered = 0
        var receiverCPU = 0.0
        var deliveredAfter: [Double] = []
        // Each delivery's latency, from its event's recording to the receiver (ms).
        let latencies = Latencies()
        for run in 0..<(2 * options.rounds + 1) {
            let batch = Array(bodies[(run * size)..<((run + 1) * size)])
            guard run % 2 == 1 else {
                say("round \(run / 2 + 1): \(size) purchases at \(options.rate)/s, no webhook endpoint…")
                without.append(try await send(batch, port: port, demo: demo, options).cpu * 1000 / Double(size))
                continue
            }
            let endpoint = try await server.webhookEndpoints.create(
                bundleId: demo.bundleId,
                .init(url: "http://127.0.0.1:\(receiver.port)/till/events")
            )
            let before = try receiver.sample()
            say("round \(run / 2 + 1): \(size) purchases at \(options.rate)/s, one endpoint taking every event…")
            let measured = try await send(batch, port: port, demo: demo, options) {
                let sample = try receiver.sample()
                latencies.add(sample.latencies)
                return sample.count >= before.count + size
            }
            let after = try receiver.sample()
            latencies.add(after.latencies)
            with.append(measured.cpu * 1000 / Double(size))
            delivered += after.count - before.count
            receiverCPU += after.cpu - before.cpu
            deliveredAfter.append(measured.elapsed)
            // Its deliveries go with it: every run starts from the same tables but for the events.
            try await server.webhookEndpoints.delete(bundleId: demo.bundleId, id: endpoint.endpoint.id)
        }
        let added = with.indices.map { with[$0] - (without[$0] + without[$0 + 1]) / 2 }
        func list(_ values: [Double]) -> String { values.map { format($0, 3) }.joined(separator: ",") }
        return [
            "without_endpoint runs=\(without.count) purchases_per_run=\(size) idle_cpu_ms_per_s=\(format(idle * 1000, 1)) "
                + "cpu_per_purchase_ms_median=\(format(median(without), 3)) cpu_per_purchase_ms=\(list(without))",
            "with_endpoint runs=\(with.count) purchases_per_run=\(size) delivered=\(delivered) "
                + "cpu_per_purchase_ms_median=\(format(median(with), 3)) cpu_per_purchase_ms=\(list(with)) "
                + "all_delivered_after_s=\(deliveredAfter.map { format($0, 2) }.joined(separator: ",")) "
                + "receiver_cpu_per_event_ms=\(format(receiverCPU * 1000 / Double(max(1, delivered)), 3))",
            "delivery_latency_ms \(latencies.summary)",
            "added_per_purchase_ms_median=\(format(median(added), 3)) added_per_purchase_ms=\(list(added))",
        ]
    }

    /// Latencies collected while a run is measured.
    final class Latencies {
        private var histogram = LatencyHistogram()

        /// Records latencies the receiver reported, in whole milliseconds.
        func add(_ milliseconds: [Int64]) {
            for value in milliseconds { histogram.record(milliseconds: Double(value)) }
        }

        /// Its percentiles in whole milliseconds: `p50=… p90=… p99=… max=… count=…`.
        var summary: String {
            guard histogram.count > 0 else { return "count=0" }
            func at(_ share: Double) -> Int64 { Int64(histogram.milliseconds(share).rounded()) }
            return "p50=\(at(0.5)) p90=\(at(0.9)) p99=\(at(0.99)) max=\(Int64(histogram.maxMilliseconds.rounded())) "
                + "count=\(histogram.count)"
        }
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    struct BenchmarkTimeout: Error, CustomStringConvertible {
        var description: String { "the deliveries did not end within 10 minutes" }
    }

    /// How long a run's CPU window stays open after its last acknowledgement or delivery.
    static let settle = Duration.milliseconds(1500)

    /// Sends the purchases at the rate and waits for their acknowledgements (and for `until`, when given), then for
    /// `settle`; answers the process's CPU seconds over the whole of it, and the time until the last
    /// acknowledgement or delivery.
    static func send(
        _ bodies: [[UInt8]],
        port: Int,
        demo: DevelopmentSetup.Demo,
        _ options: Options,
        until done: (() async throws -> Bool)? = nil
    ) async throws -> (acknowledged: Int, cpu: Double, elapsed: Double) {
        let requests = bodies.map { body in
            LoadGenerator.Request(
                method: .POST,
                path: "/v1/receipts",
                host: "127.0.0.1:\(port)",
                headers: [("Authorization", "Bearer \(demo.appKey)"), ("Content-Type", "application/json")],
                body: body
            )
        }
        let clock = ContinuousClock()
        let start = clock.now
        let cpuAtStart = processCPUSeconds()
        let generator = LoadGenerator()
        let answers = try await generator.run(
            host: "127.0.0.1",
            port: port,
            requests: requests,
            rate: options.rate,
            connections: options.connections
        )
        try await generator.shutdown()
        if let done {
            while try await !done() {
                guard clock.now - start < .seconds(600) else { throw BenchmarkTimeout() }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        let elapsed = seconds(clock.now - start)
        // The work a purchase leaves for later (the figures' fold, once a second; the log's checkpoints) is counted
        // in every run alike: the window ends `settle` after the last acknowledgement (or delivery).
        try await Task.sleep(for: settle)
        let (acknowledged, _) = tally(answers)
        guard acknowledged.count == bodies.count else {
            throw BenchmarkFailure(description: "\(bodies.count - acknowledged.count) purchases were not acknowledged")
        }
        return (acknowledged.count, processCPUSeconds() - cpuAtStart, elapsed)
    }

    /// `count` events (an operator's credit each), for `customers` customers, from eight tasks at once.
    static func record(_ count: Int, customers: Int, server: PurchaseServer, bundleId: String) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<8 {
                group.addTask {
                    for index in stride(from: lane, to: count, by: 8) {
                        _ = try await server.ledger.adjustBalance(
                            bundleId: bundleId,
                            customerId: "customer-\(index % customers)",
                            credit: "gems",
                            delta: 1,
                            requestId: "backlog-\(index)",
                            note: "benchmark"
                        )
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// Signed purchases of a consumable, as submission bodies, each by a customer of its own: a purchase reads back the
    /// customer's earlier ones, so with purchases spread over 1,000 customers the CPU per purchase grew from 1.6 to 3.0 ms
    /// over 31,000 of them, and every run did more work than the one before.
    static func purchases(_ count: Int, _ simulator: Simulator, _ demo: DevelopmentSetup.Demo)
        async throws -> [[UInt8]]
    {
        try await withThrowingTaskGroup(of: [(Int, [UInt8])].self) { group in
            for lane in 0..<2 {
                group.addTask {
                    let account = try await simulator.appStoreConnect.createAccount(
                        AccountInput(environment: "Sandbox")
                    )
                    let device = try await simulator.appStoreConnect.createDevice(accountId: account.id, DeviceInput())
                    var made: [(Int, [UInt8])] = []
                    for index in stride(from: lane, to: count, by: 2) {
                        let purchase = try await simulator.payments.addPayment(
                            PaymentRequest(deviceId: device.id, bundleId: demo.bundleId, productId: "gems.100"),
                            environment: .sandbox
                        )
                        guard let jws = purchase.signedTransaction else { continue }
                        let body = try JSONSerialization.data(
                            withJSONObject: ["customerId": "buyer-\(index)", "signedTransaction": jws]
                        )
                        made.append((index, Array(body)))
                    }
                    return made
                }
            }
            var all = [[UInt8]](repeating: [], count: count)
            for try await made in group { for (index, body) in made { all[index] = body } }
            return all
        }
    }

    struct BenchmarkFailure: Error, CustomStringConvertible {
        var description: String
    }

    static func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
