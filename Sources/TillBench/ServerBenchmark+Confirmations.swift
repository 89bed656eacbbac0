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

extension ServerBenchmark {
    /// Counts confirmed submissions once a second until all are confirmed or a minute passes without progress.
    struct ConfirmationWatch {
        let server: PurchaseServer
        let total: Int
        /// Gives up after this long without a new confirmation.
        var patience: Duration = .seconds(60)

        struct Result {
            var confirmed: Int
            var peakRate: Int
            var meanRate: Int
            var doneAfter: Duration?
        }

        func watch(from start: ContinuousClock.Instant) async throws -> Result {
            let clock = ContinuousClock()
            var samples: [(ContinuousClock.Instant, Int)] = []
            var lastProgress = clock.now
            var cpu = processCPUSeconds()
            while true {
                try await Task.sleep(for: .seconds(1))
                let confirmed =
                    try await server.database.sql.raw(
                        "SELECT COUNT(*) AS n FROM srv_submissions WHERE state = 'confirmed'"
                    ).first()?.decode(column: "n", as: Int.self) ?? 0
                // A timeline, a line a second: what was confirmed, the pace allowed, the CPU used.
                let cpuNow = processCPUSeconds()
                say(
                    "  t=\(Int(Self.seconds(clock.now - start)))s confirmed=+\(confirmed - (samples.last?.1 ?? 0)) "
                        + "pace=\(Int(server.queue.pace))/s cpu=\(Int((cpuNow - cpu) * 100))%"
                )
                cpu = cpuNow
                if confirmed != samples.last?.1 { lastProgress = clock.now }
                samples.append((clock.now, confirmed))
                if confirmed >= total || clock.now - lastProgress > patience { break }
            }
            var peak = 0.0
            for (index, sample) in samples.enumerated() where index >= 5 {
                let earlier = samples[index - 5]
                peak = max(peak, Double(sample.1 - earlier.1) / Self.seconds(sample.0 - earlier.0))
            }
            let first = samples.first { $0.1 > 0 }
            let last = samples.last!
            let mean =
                first.map { Double(last.1 - $0.1) / max(0.001, Self.seconds(last.0 - $0.0)) } ?? 0
            return Result(
                confirmed: last.1,
                peakRate: Int(peak),
                meanRate: Int(mean),
                doneAfter: last.1 >= total ? last.0 - start : nil
            )
        }

        static func seconds(_ duration: Duration) -> Double { Double(duration.nanoseconds) / 1e9 }
    }
}
