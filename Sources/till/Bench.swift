import ArgumentParser
import Foundation
import TillBench
import TillFormats

/// `till bench`: verification throughput on one core (build with `-c release`).
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure verification on one core, or the server under load, and print the figures.",
        discussion: """
            Run a release build. swift run -c release till bench all runs every benchmark below in turn (under 10 \
            minutes) and prints one table of their figures; till bench verification measures jws, receipt and es256 \
            on one core (pin it with taskset -c 1). till bench submissions --rate 1000 --seconds 20 sends receipts at a fixed rate to till serve with the \
            simulator answering verifyReceipt in --apple-latency seconds (--outage-at 20 --outage-seconds 60 takes \
            Apple down in the middle); till bench reads measures customer reads \
            beside a bare Hummingbird route; till bench events --rate 500 measures webhook deliveries per second and \
            the CPU one endpoint adds to a purchase; till bench ledger --database-url big.sqlite writes a ledger of \
            --transactions (1,000,000) over --customers (100,000), and till bench console --database-url big.sqlite \
            times every page of the console on it. See docs/benchmarks.md.
            """
    )

    enum Target: String, ExpressibleByArgument, CaseIterable {
        case jws, receipt, es256, verification, all, submissions, reads, database, events, receiver, limits, ledger,
            console
    }

    @Argument(
        help:
            "all (every benchmark, one table), jws (chain + signature + decode), receipt (CMS signature + chain + decode), es256 (the raw signature check), verification (those three), submissions or reads (the server), database (statement costs), events (webhook deliveries and what an endpoint costs a purchase; receiver is its receiver process), limits (the worst input of each limit on hostile input), ledger (write a big ledger for the console), console (time the console's pages on it)."
    )
    var target: Target = .verification

    @Option(help: "Seconds to measure each benchmark.")
    var seconds: Int = 5

    @Option(name: .customLong("case"), help: "limits: run only this case, in this process (one JSON line).")
    var limitsCase: String?

    @Option(help: "In-app purchases in the benchmark receipt.")
    var purchases: Int = 10

    @Option(help: "submissions: submissions sent per second.")
    var rate: Int = 1000

    @Option(help: "submissions: how long the simulated Apple takes to answer verifyReceipt, in seconds (3-6 or 4).")
    var appleLatency: String = "3-6"

    @Option(help: "submissions: confirmations in flight at once.")
    var concurrency: Int = 4096

    @Option(help: "submissions: Apple goes down (connections reset) this many seconds into the run…")
    var outageAt: Int = 0

    @Option(help: "submissions: …for this many seconds (0: no outage).")
    var outageSeconds: Int = 0

    @Flag(inversion: .prefixedNo, help: "submissions: pace confirmation attempts by the CPU acknowledgements leave.")
    var pacing = true

    @Option(help: "submissions: the pacer's CPU threshold (confirmation.busy-cpu-share).")
    var busyCPUShare: Double = 0.5

    @Option(help: "submissions and reads: HTTP connections the load generator opens.")
    var connections: Int = 64

    @Option(
        help:
            "submissions and reads: the server's database (default: an SQLite file in a temporary folder); all: a ledger for the console's pages (default: one of 100,000 transactions, written first)."
    )
    var databaseURL: String?

    @Option(help: "submissions: write each request's due time and acknowledgement latency to this CSV file.")
    var latencies: String?

    @Option(
        help: "submissions: send to customers who each bought a consumable this many times before (0: new customers)."
    )
    var history = 0

    @Option(help: "submissions: how many customers with --history the submissions go to.")
    var historyCustomers = 10

    @Option(help: "submissions: CPU-bound processes to run beside the server (each keeps a core busy).")
    var neighbours = 0

    @Flag(
        help: "submissions: tracing on, traces exported to a collector in a process of its own (docs/tracing.md)."
    )
    var tracing = false

    @Option(help: "submissions: with --tracing, the share of traces kept (tracing.sample-ratio).")
    var traceSampleRatio = 1.0

    @Option(help: "events: purchases sent in each run (the runs alternate: without an endpoint, with one, without…).")
    var eventPurchases = 1000

    @Option(help: "events: runs with an endpoint, each between two without (the median of what each adds is reported).")
    var rounds = 5

    @Option(help: "events: events in the backlog delivered at once.")
    var events = 20_000

    @Option(help: "events: the webhook worker's batch window in ms (webhooks.batch-window-ms; default 50).")
    var batchWindowMs: Int?

    @Option(help: "events: the deliveries a round may send one endpoint (webhooks.batch-per-endpoint; default 32).")
    var batchPerEndpoint: Int?

    @Option(
        help:
            "events: customers the backlog's events are spread over (each one's events go out in order); ledger: the ledger's customers (100000 by default)."
    )
    var customers: Int?

    @Option(help: "ledger: the transactions of the ledger it writes.")
    var transactions = 1_000_000

    @Option(help: "ledger: how many days back its purchases go.")
    var days = 730

    @Option(help: "console: requests of each page timed (after two warm-ups).")
    var iterations = 30

    func validate() throws {
        guard seconds >= 1 else { throw ValidationError("--seconds must be at least 1") }
        guard (1...1000).contains(purchases) else { throw ValidationError("--purchases must be between 1 and 1000") }
        guard (1...20000).contains(rate) else { throw ValidationError("--rate must be between 1 and 20000") }
        guard (1...100_000).contains(concurrency) else { throw ValidationError("--concurrency must be positive") }
        guard (1...4096).contains(connections) else { throw ValidationError("--connections must be 1 to 4096") }
        guard outageAt >= 0, outageSeconds >= 0 else { throw ValidationError("outage times are not negative") }
        guard busyCPUShare > 0 && busyCPUShare <= 1 else { throw ValidationError("--busy-cpu-share is in (0, 1]") }
        guard (0...64).contains(neighbours) else { throw ValidationError("--neighbours is 0 to 64") }
        guard (0...1_000_000).contains(history) else { throw ValidationError("--history is 0 to 1,000,000") }
        guard (1...10_000).contains(historyCustomers) else {
            throw ValidationError("--history-customers is 1 to 10,000")
        }
        guard (1...100).contains(rounds) else { throw ValidationError("--rounds is 1 to 100") }
        guard eventPurchases >= 1 else { throw ValidationError("--event-purchases must be positive") }
    }

    func run() async throws {
        let options = ServerBenchmark.Options(
            seconds: seconds,
            rate: rate,
            appleLatency: appleLatency,
            concurrency: concurrency,
            connections: connections,
            databaseURL: databaseURL,
            outageAt: outageAt,
            outageSeconds: outageSeconds,
            pacing: pacing,
            busyCPUShare: busyCPUShare,
            latenciesFile: latencies,
            neighbours: neighbours,
            history: history,
            historyCustomers: historyCustomers,
            tracing: tracing,
            traceSampleRatio: traceSampleRatio
        )
        switch target {
        case .limits:
            if let limitsCase {
                let measurement = try await LimitsBenchmark.run(case: limitsCase, seconds: seconds)
                return print(String(decoding: try JSONEncoder().encode(measurement), as: UTF8.self))
            }
            return print(try await LimitsBenchmark.all(executable: Self.executable, seconds: seconds))
        case .submissions: return print(try await ServerBenchmark.submissions(options))
        case .reads: return print(try await ServerBenchmark.reads(options))
        case .database: return print(try await ServerBenchmark.database(options))
        case .receiver: return try await EventReceiverProcess.serve()
        case .all: return print(try await BenchSuite.run(executable: Self.executable, ledger: databaseURL))
        case .ledger, .console:
            guard let databaseURL else {
                throw ValidationError("\(target.rawValue) needs --database-url (an SQLite file; ledger makes it)")
            }
            if target == .ledger {
                let shape = LedgerGenerator.Shape(
                    transactions: transactions,
                    customers: customers ?? 100_000,
                    days: days
                )
                return print(try await ConsoleBenchmark.generate(databaseURL: databaseURL, shape: shape))
            }
            return print(try await ConsoleBenchmark.pages(databaseURL: databaseURL, iterations: iterations))
        case .events:
            return print(
                try await EventBenchmark.run(
                    .init(
                        purchases: eventPurchases,
                        rounds: rounds,
                        rate: rate,
                        events: events,
                        customers: customers ?? 1000,
                        connections: connections,
                        databaseURL: databaseURL,
                        batchWindow: batchWindowMs.map { .milliseconds($0) },
                        batchPerEndpoint: batchPerEndpoint
                    )
                )
            )
        default: break
        }
        let duration = Duration.seconds(seconds)
        if target == .es256 || target == .verification {
            print(try await VerificationBenchmark.es256(duration: duration))
        }
        if target == .jws || target == .verification { print(try await VerificationBenchmark.jws(duration: duration)) }
        if target == .receipt || target == .verification {
            print(try await VerificationBenchmark.receipts(purchases: purchases, duration: duration))
        }
    }

    /// This program, for the children `limits` runs each case in.
    static var executable: String {
        guard FileManager.default.fileExists(atPath: "/proc/self/exe") else { return CommandLine.arguments[0] }
        return URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    }
}
