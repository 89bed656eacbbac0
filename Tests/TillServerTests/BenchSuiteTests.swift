import Foundation
import Testing

@testable import TillBench

/// `till bench all` reads its table from what each benchmark prints: the lines as they are written today.
struct BenchSuiteTests {
    @Test func theTableReadsEachBenchmarksLines() throws {
        let steps = BenchSuite.steps(ledger: "big.sqlite", scratch: .init(fileURLWithPath: "/tmp"))
        func figures(_ title: String, _ output: String) throws -> String {
            try #require(steps.first { $0.title.hasPrefix(title) }).figures(output)
        }
        #expect(
            try figures("verification: jws", "jws ops_per_sec=16423 p50_us=58.9 p99_us=116.2 mean_ops_per_sec=14989 operations=74945")
                == "16423/s (best second), p50 58.9 µs"
        )
        let submissions = """
            submissions rate=1000/s sent=10000 in 10.0s acknowledged=10000 failed=[:] ack_p50_ms=2.32 ack_p90_ms=5.36 ack_p99_ms=12.85 ack_max_ms=25.52 steal_while_sending_pct=0.0 writer_busy_while_sending_pct=78
            confirmations confirmed=10000 peak_per_sec_5s=600 mean_per_sec=232 all_done_after_s=43.0 apple_latency_s=3-6 concurrency=4096 neighbours=0 history=0
            cpu while_sending_s=15.0 seconds=54.5 per_purchase_ms=5.45 (client, server, confirmation and simulator together)
            """
        #expect(
            try figures("submissions at 1000/s", submissions)
                == "ack p50 2.32 ms, p99 12.85 ms (the SQLite writer busy 78% of the sending); 5.45 ms CPU a purchase; "
                + "all confirmed after 43.0 s"
        )
        let console = """
            overview (30 days by day)                p50_ms=    3.1 p95_ms=    4.0 max_ms=    4.2 bytes=51234
            customers: search by transaction id      p50_ms=   12.5 p95_ms=   13.0 max_ms=   14.0 bytes=9000
            """
        #expect(try figures("console pages", console) == "2 pages; slowest p50 12.5 ms (customers: search by transaction id)")
        // An existing ledger is used as it is: nothing is written first.
        #expect(!steps.contains { $0.arguments.contains("ledger") })
        #expect(throws: (any Error).self) { try figures("customer reads", "nothing of the kind") }
    }
}

/// The benchmarks' percentiles, from the HdrHistogram every one of them records into.
struct LatencyHistogramTests {
    @Test func percentilesAreThoseOfTheRecordedLatenciesToThreeDigits() {
        // 1 … 1000 ms, recorded by two connections and added together.
        var odd = LatencyHistogram()
        var even = LatencyHistogram()
        for milliseconds in 1...1000 {
            if milliseconds.isMultiple(of: 2) {
                even.record(.milliseconds(milliseconds))
            } else {
                odd.record(milliseconds: Double(milliseconds))
            }
        }
        var all = odd
        all.add(even)
        #expect(all.count == 1000 && odd.count == 500)
        func near(_ value: Double, _ expected: Double) -> Bool { abs(value - expected) <= expected * 0.001 }
        #expect(near(all.milliseconds(0.5), 500), "\(all.milliseconds(0.5))")
        #expect(near(all.milliseconds(0.99), 990), "\(all.milliseconds(0.99))")
        #expect(near(all.maxMilliseconds, 1000), "\(all.maxMilliseconds)")
        #expect(near(odd.milliseconds(0.5), 499), "\(odd.milliseconds(0.5))")
        #expect(LatencyHistogram().percentile(0.99) == .zero && LatencyHistogram().max == .zero)
        // Out of range: under a nanosecond counts as one, over an hour as an hour.
        let extremes = LatencyHistogram([.zero, .seconds(7200)])
        #expect(extremes.count == 2 && near(Double(extremes.max.nanoseconds), 3.6e12))
    }
}
