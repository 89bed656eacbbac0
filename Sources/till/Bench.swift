import ArgumentParser
import TillFormats

/// `till bench`: verification throughput on one core (build with `-c release`).
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure full verification on one core and print NAME ops_per_sec=… p50_us=… p99_us=….",
        discussion:
            "Run a release build: swift run -c release till bench all. Pin it with taskset -c 1 for steadier figures."
    )

    enum Target: String, ExpressibleByArgument, CaseIterable {
        case jws, receipt, es256, all
    }

    @Argument(
        help:
            "jws (chain + signature + decode), receipt (CMS signature + chain + decode), es256 (the raw signature check), or all."
    )
    var target: Target = .all

    @Option(help: "Seconds to measure each benchmark.")
    var seconds: Int = 5

    @Option(help: "In-app purchases in the benchmark receipt.")
    var purchases: Int = 10

    func validate() throws {
        guard seconds >= 1 else { throw ValidationError("--seconds must be at least 1") }
        guard (1...1000).contains(purchases) else { throw ValidationError("--purchases must be between 1 and 1000") }
    }

    func run() async throws {
        let duration = Duration.seconds(seconds)
        if target == .es256 || target == .all { print(try await VerificationBenchmark.es256(duration: duration)) }
        if target == .jws || target == .all { print(try await VerificationBenchmark.jws(duration: duration)) }
        if target == .receipt || target == .all {
            print(try await VerificationBenchmark.receipts(purchases: purchases, duration: duration))
        }
    }
}
