import AsyncHTTPClient
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import SQLKit
import ServiceLifecycle
import TillAppStore
import TillContract
import TillCore
import TillDevelopment
import TillFormats
import TillServer
import TillSimulator
import TillStorage

#if canImport(Glibc)
    import Glibc
#endif

/// The verification server under load, with the simulator standing in for a slow Apple, all on this machine.
///
/// The load generator runs in the same process as the server (the machine has 2 cores and nothing else to
/// run it on), so every figure includes the client's own cost.
public enum ServerBenchmark {
    public struct Options: Sendable {
        var seconds: Int
        var rate: Int
        var appleLatency: String
        var concurrency: Int
        var connections: Int
        var databaseURL: String?
        var outageAt: Int = 0
        var outageSeconds: Int = 0
        var pacing = true
        var busyCPUShare = 0.5
        /// Where to write `index,due_ms,status,latency_ms,send_delay_ms,due_monotonic_ms` for every request, to
        /// study the tail (the last column lines requests up with `perf record -k mono` samples).
        var latenciesFile: String? = nil
        /// CPU-bound processes run beside the server for the whole run (a co-located database, a build).
        var neighbours = 0
        /// Submissions go to `historyCustomers` customers who each bought a consumable this many times before the run
        /// (0: each submission is a new customer's).
        var history = 0
        var historyCustomers = 10
        /// Tracing on (docs/tracing.md), every trace kept, exported to a collector in a process of its own (`till bench
        /// receiver`, whose CPU is not counted): what traces cost a purchase.
        var tracing = false
        /// With `tracing`, the share of traces kept (`tracing.sample-ratio`).
        var traceSampleRatio = 1.0

        public init(
            seconds: Int,
            rate: Int,
            appleLatency: String,
            concurrency: Int,
            connections: Int,
            databaseURL: String?,
            outageAt: Int = 0,
            outageSeconds: Int = 0,
            pacing: Bool = true,
            busyCPUShare: Double = 0.5,
            latenciesFile: String? = nil,
            neighbours: Int = 0,
            history: Int = 0,
            historyCustomers: Int = 10,
            tracing: Bool = false,
            traceSampleRatio: Double = 1
        ) {
            self.seconds = seconds
            self.rate = rate
            self.appleLatency = appleLatency
            self.concurrency = concurrency
            self.connections = connections
            self.databaseURL = databaseURL
            self.outageAt = outageAt
            self.outageSeconds = outageSeconds
            self.pacing = pacing
            self.busyCPUShare = busyCPUShare
            self.latenciesFile = latenciesFile
            self.neighbours = neighbours
            self.history = history
            self.historyCustomers = historyCustomers
            self.tracing = tracing
            self.traceSampleRatio = traceSampleRatio
        }
    }

    /// A simulator and a server listening on loopback ports, with the demo app, until `body` returns.
    static func withServers(
        _ options: Options,
        faults: [FaultRule],
        _ body: (PurchaseServer, Simulator, DevelopmentSetup.Demo, Int) async throws -> Void
    ) async throws {
        var quiet = Logger(label: "till.bench")
        quiet.logLevel = .warning
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("till-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let simulator = try await Simulator.open(SimulatorConfiguration(faults: faults), logger: quiet)
        let simulatorPort = try await Ports.start(
            { buildSimulatorApplication(simulator, port: 0, onServerRunning: $0) },
            logger: quiet
        )
        let database = try DatabaseConfiguration(
            parsing: options.databaseURL ?? directory.appendingPathComponent("till.sqlite").path
        )
        // The collector: `till bench receiver` answers every export 204, as OTLP/HTTP allows.
        let collector = try options.tracing ? EventReceiverProcess.Driver.start() : nil
        defer { collector?.stop() }
        var configuration =
            ServerConfiguration(
                database: database,
                operatorToken: "bench",
                apple: .simulator("http://127.0.0.1:\(simulatorPort.port)"),
                sandboxJWSRoots: [simulator.signer.jwsAuthority.root],
                sandboxReceiptRoots: [simulator.signer.receiptAuthority.root],
                sandboxReceiptIntermediates: [simulator.signer.receiptAuthority.intermediate],
                confirmation: ConfirmationSettings(
                    concurrency: options.concurrency,
                    requestTimeout: .seconds(30),
                    pacing: options.pacing,
                    busyCPUShare: options.busyCPUShare
                ),
                // No catch-up with Apple's histories during a run: it is not what these benchmarks measure, and its
                // first run, at start, overlapped some --history runs and not others (the simulator looking up the
                // loaded transactions it never sold: 12% of the CPU under perf, and 56% more CPU a purchase).
                catchUp: CatchUpSettings(interval: .zero),
                contentDirectory: directory.appendingPathComponent("content").path
            )
        configuration.tracing = collector.map {
            TracingSettings(endpoint: "http://127.0.0.1:\($0.port)/v1/traces", sampleRatio: options.traceSampleRatio)
        }
        let server = try await PurchaseServer.open(configuration, logger: quiet)
        if let collector {
            say(
                "tracing on: \(options.traceSampleRatio) of the traces exported to a collector on port \(collector.port)"
            )
        }
        let demo = try await DevelopmentSetup.prepare(server: server, simulator: simulator)
        let serverPort = try await Ports.start(
            { buildServerApplication(server, port: 0, onServerRunning: $0) },
            logger: quiet
        )
        do {
            try await body(server, simulator, demo, serverPort.port)
        } catch {
            await serverPort.stop()
            await simulatorPort.stop()
            throw error
        }
        await serverPort.stop()
        await simulatorPort.stop()
        if let collector { say("tracing: the collector received \(try collector.sample().count) exports") }
        try await server.shutdown()
        try await simulator.shutdown()
    }

    // MARK: Submissions

    /// Submissions at a fixed rate (open loop: late answers do not slow the sender), then the confirmations.
    public static func submissions(_ options: Options) async throws -> String {
        let count = options.rate * options.seconds
        let latency = try FaultRule(parsing: "*:verifyReceipt:latency=\(options.appleLatency)")
        var report = ""
        try await withServers(options, faults: [latency]) { server, simulator, demo, port in
            var customer: @Sendable (Int) -> String = { "bench-\($0)" }
            if options.history > 0 {
                say("writing \(options.historyCustomers) customers' histories of \(options.history) consumables…")
                try await HistoryLoader.write(
                    purchases: options.history,
                    customers: options.historyCustomers,
                    bundleId: demo.bundleId,
                    into: server
                )
                let customers = options.historyCustomers
                customer = { HistoryLoader.customerId($0 % customers) }
            }
            say("preparing \(count) purchases, one device each, with their app receipts…")
            let bodies = try await purchases(count: count, simulator: simulator, demo: demo, customer: customer)
            let requests = bodies.map { body in
                LoadGenerator.Request(
                    method: .POST,
                    path: "/v1/receipts",
                    host: "127.0.0.1:\(port)",
                    headers: [("Authorization", "Bearer \(demo.appKey)"), ("Content-Type", "application/json")],
                    body: body
                )
            }
            let generator = LoadGenerator()
            let neighbours = try Neighbours(count: options.neighbours)
            defer { neighbours.stop() }
            if options.neighbours > 0 { say("\(options.neighbours) CPU-bound processes run beside the server") }
            say("sending \(count) submissions at \(options.rate)/s; Apple answers in \(options.appleLatency) s")
            let clock = ContinuousClock()
            let start = clock.now
            let cpuAtStart = processCPUSeconds()
            let ticksAtStart = machineTicks()
            let writerAtStart = server.database.writerBusy
            let logAtStart = (server.database.walPagesAppended, simulator.database.walPagesAppended)
            let writerCheckpointsAtStart = server.database.walWriterCheckpoints
            let outageStart = start + .seconds(options.outageAt)
            if options.outageSeconds > 0 {
                let rule = try FaultRule(parsing: "*:verifyReceipt:outage=reset,for=\(options.outageSeconds)")
                Task {
                    try await Task.sleep(until: outageStart, clock: clock)
                    say("Apple is down (connections reset) for \(options.outageSeconds) s")
                    simulator.faults.add(rule)
                }
            }
            let confirmations = ConfirmationWatch(
                server: server,
                total: count,
                patience: .seconds(60 + options.outageSeconds)
            )
            async let watched = confirmations.watch(from: start)
            let answers = try await generator.run(
                host: "127.0.0.1",
                port: port,
                requests: requests,
                rate: options.rate,
                connections: options.connections
            )
            try await generator.shutdown()
            let outageRequests =
                (options.outageAt * options.rate)..<((options.outageAt + options.outageSeconds) * options.rate)
            let sent = clock.now - start
            // Acknowledgement latency by the second the submission was due, to see when the tail happens.
            let bySecond = Dictionary(grouping: answers) { $0.index / options.rate }
            for second in bySecond.keys.sorted() {
                let times = LatencyHistogram(bySecond[second]!.map { Duration.nanoseconds($0.nanoseconds) })
                say(
                    "  second \(second): ack p50=\(ms(times.percentile(0.5))) p99=\(ms(times.percentile(0.99))) max=\(ms(times.max)) ms"
                )
            }
            let cpuSending = processCPUSeconds() - cpuAtStart
            // How much of the sending the SQLite writer worked: near 100%, acknowledgements queue for it whatever the
            // CPU does (PostgreSQL has no one writer: "-").
            var writerBusy = "-"
            if let before = writerAtStart, let after = server.database.writerBusy {
                writerBusy = String(
                    format: "%.0f",
                    100 * Double((after - before).nanoseconds) / Double(max(1, sent.nanoseconds))
                )
            }
            if let file = options.latenciesFile {
                var csv = "index,due_ms,status,latency_ms,send_delay_ms,due_monotonic_ms\n"
                for answer in answers.sorted(by: { $0.index < $1.index }) {
                    let due = Double(answer.index) * 1000 / Double(options.rate)
                    csv += "\(answer.index),\(String(format: "%.3f", due)),\(answer.status),"
                    csv += "\(String(format: "%.3f", Double(answer.nanoseconds) / 1e6)),"
                    csv += "\(String(format: "%.3f", Double(answer.sendDelayNanoseconds) / 1e6)),"
                    csv += "\(String(format: "%.3f", Double(answer.dueUptimeNanoseconds) / 1e6))\n"
                }
                try csv.write(toFile: file, atomically: true, encoding: .utf8)
            }
            let steal = stealPercent(from: ticksAtStart, to: machineTicks())
            let (acknowledged, failures) = tally(answers)
            say(
                "  all sent: ack p50=\(ms(acknowledged.percentile(0.5))) p99=\(ms(acknowledged.percentile(0.99))) ms, "
                    + "cpu \(String(format: "%.1f", cpuSending)) s, steal \(steal)%, writer busy \(writerBusy)%"
            )
            let confirmed = try await watched
            let cpu = processCPUSeconds() - cpuAtStart
            // Pages of 4 KB appended to each SQLite database's log, per purchase (checkpoints write each again).
            func logPages(_ start: Int?, _ end: Int?) -> String {
                guard let start, let end else { return "-" }
                return String(format: "%.1f", Double(end - start) / Double(count))
            }
            let serverLog = logPages(logAtStart.0, server.database.walPagesAppended)
            let simulatorLog = logPages(logAtStart.1, simulator.database.walPagesAppended)
            // The checkpoints the server's committing writer ran itself so that its log starts over: each holds every
            // write for its length.
            var writerCheckpoints = "-"
            if let start = writerCheckpointsAtStart, let end = server.database.walWriterCheckpoints {
                let count = end.count - start.count
                writerCheckpoints =
                    "\(count) waits=\(end.waits - start.waits) held_ms_mean=\(count == 0 ? "-" : ms((end.held - start.held) / count)) "
                    + "pages_mean=\(count == 0 ? "-" : String((end.pages - start.pages) / count)) "
                    + "held_ms_longest=\(ms(end.longest)) pages_largest=\(end.largest)"
            }
            report = """
                submissions rate=\(options.rate)/s sent=\(count) in \(seconds(sent))s acknowledged=\(acknowledged.count) \
                failed=\(failures) ack_p50_ms=\(ms(acknowledged.percentile(0.5))) \
                ack_p90_ms=\(ms(acknowledged.percentile(0.9))) ack_p99_ms=\(ms(acknowledged.percentile(0.99))) \
                ack_max_ms=\(ms(acknowledged.max)) steal_while_sending_pct=\(steal) \
                writer_busy_while_sending_pct=\(writerBusy)
                confirmations confirmed=\(confirmed.confirmed) peak_per_sec_5s=\(confirmed.peakRate) \
                mean_per_sec=\(confirmed.meanRate) all_done_after_s=\(confirmed.doneAfter.map(seconds) ?? "not all") \
                apple_latency_s=\(options.appleLatency) concurrency=\(options.concurrency) neighbours=\(options.neighbours) history=\(options.history)
                cpu while_sending_s=\(String(format: "%.1f", cpuSending)) seconds=\(String(format: "%.1f", cpu)) per_purchase_ms=\(String(format: "%.2f", cpu * 1000 / Double(count))) \
                (client, server, confirmation and simulator together, from the first submission to the last confirmation)
                log pages_per_purchase_server=\(serverLog) pages_per_purchase_simulator=\(simulatorLog) \
                (4 KB pages appended to each SQLite database's write-ahead log, to the last confirmation)
                log writer_checkpoints=\(writerCheckpoints) (the server's log finished by its writer so that it starts over; longest and largest since the server started)
                """
            if options.outageSeconds > 0 {
                let (acknowledged, failures) = tally(answers.filter { outageRequests.contains($0.index) })
                let ended = Duration.seconds(options.outageAt + options.outageSeconds)
                let sentDuring = acknowledged.count + failures.values.reduce(0, +)
                report += """

                    outage from_s=\(options.outageAt) for_s=\(options.outageSeconds) sent_during=\(sentDuring) acknowledged=\(acknowledged.count) failed=\(failures) \
                    ack_p50_ms=\(ms(acknowledged.percentile(0.5))) ack_p99_ms=\(ms(acknowledged.percentile(0.99))) \
                    all_confirmed_s_after_outage_end=\(confirmed.doneAfter.map { seconds($0 - ended) } ?? "not all")
                    """
            }
        }
        return report
    }

    /// Processes that each keep a core busy (`sh -c 'while :; do :; done'`), as a database, a build or another
    /// service on the same machine would: the pacer must confirm whatever they do.
    struct Neighbours {
        let processes: [Process]

        init(count: Int) throws {
            processes = try (0..<count).map { _ in
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/bin/sh")
                process.arguments = ["-c", "while :; do :; done"]
                try process.run()
                return process
            }
        }

        /// SIGKILL: a child of this process inherits SIGTERM ignored (the service group handles it with a dispatch
        /// source), and a shell loop keeps it so.
        func stop() {
            for process in processes where process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
    }

    /// One device and one purchase of a consumable per submission, as many customers would send them.
    static func purchases(
        count: Int,
        simulator: Simulator,
        demo: DevelopmentSetup.Demo,
        customer: @escaping @Sendable (Int) -> String = { "bench-\($0)" }
    ) async throws -> [[UInt8]] {
        let lanes = 2
        return try await withThrowingTaskGroup(of: [(Int, [UInt8])].self) { group in
            for lane in 0..<lanes {
                group.addTask {
                    // One account per purchase, as many customers would send them: a receipt lists its account's
                    // history, and one growing account would make each receipt slower to build than the last.
                    var made: [(Int, [UInt8])] = []
                    for index in stride(from: lane, to: count, by: lanes) {
                        let account = try await simulator.appStoreConnect.createAccount(
                            AccountInput(environment: "Sandbox")
                        )
                        let device = try await simulator.appStoreConnect.createDevice(
                            accountId: account.id,
                            DeviceInput()
                        )
                        let purchase = try await simulator.payments.addPayment(
                            PaymentRequest(deviceId: device.id, bundleId: demo.bundleId, productId: "gems.100"),
                            environment: .sandbox
                        )
                        let receipt = try await simulator.payments.appReceipt(
                            deviceId: device.id,
                            bundleId: demo.bundleId,
                            environment: .sandbox
                        )
                        try await simulator.payments.finish(
                            entryId: purchase.id,
                            deviceId: device.id,
                            environment: .sandbox
                        )
                        let body = try JSONSerialization.data(
                            withJSONObject: ["customerId": customer(index), "receipt": Base64.encode(receipt)]
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

}

/// The machine's CPU time so far, in clock ticks: all of it, and the part the hypervisor gave to other
/// machines (steal), from `/proc/stat`. Nil where there is no such file.
func machineTicks() -> (total: Double, steal: Double)? {
    guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
        let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") })
    else { return nil }
    let fields = line.split(separator: " ").dropFirst().compactMap { Double($0) }
    guard fields.count >= 8 else { return nil }
    return (fields.prefix(8).reduce(0, +), fields[7])
}

/// The share of the machine's CPU time stolen by the hypervisor between two readings, in percent.
func stealPercent(from start: (total: Double, steal: Double)?, to end: (total: Double, steal: Double)?) -> String {
    guard let start, let end, end.total > start.total else { return "unknown" }
    return String(format: "%.1f", 100 * (end.steal - start.steal) / (end.total - start.total))
}

/// CPU time this process has used (user and system), in seconds.
func processCPUSeconds() -> Double {
    let used = ProcessCPU.used()
    return Double(used.components.seconds) + Double(used.components.attoseconds) / 1e18
}

/// The acknowledged latencies, and the count of each other status (0: no answer).
func tally(_ answers: [LoadGenerator.Outcome]) -> (LatencyHistogram, [Int: Int]) {
    var acknowledged = LatencyHistogram()
    var failures: [Int: Int] = [:]
    for answer in answers {
        if answer.status == 200 || answer.status == 202 {
            acknowledged.record(.nanoseconds(answer.nanoseconds))
        } else {
            failures[answer.status, default: 0] += 1
        }
    }
    return (acknowledged, failures)
}

extension Duration {
    var nanoseconds: Int64 {
        components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
    }
}
