import Foundation
import HTTPTypes
import Logging
import TillCatalogue
import TillDevelopment
import TillFormats
import TillServer
import TillSimulator
import TillStorage

/// What a purchase and a customer read allocate on the server: the heap allocations (every `malloc`, `calloc` and
/// growing `realloc`: Swift's objects and buffers, NIO's, SQLite's) and the bytes they ask for, counted by the
/// mirrored malloc interposer in a process of its own (`till-allocations`, which links it; the counters are the
/// process's, so nothing else may run there). Counts, not timings: the same code on the same toolchain allocates the
/// same, and `PurchaseAllocationTests` holds them to budgets (docs/benchmarks.md, "What CI counts").
///
/// Each request goes through the server's router in this process, as Hummingbird hands it over (middleware, the app
/// key, decoding, verification, the ledger's transaction on an SQLite file with its log, the answer encoded): the
/// sockets and the HTTP parser are Hummingbird's and NIO's and not counted. No worker runs, so nothing else allocates
/// while the counter is on, but for the SQLite writer committing what the requests ask.
public enum AllocationCount {
    /// What a kind of request allocated, a request on average.
    public struct Figure: Sendable, CustomStringConvertible {
        public var operation: String
        public var requests: Int
        public var allocations: Double
        public var bytes: Double

        public var description: String {
            "\(operation) requests=\(requests) allocations_per_request=\(String(format: "%.1f", allocations)) "
                + "bytes_per_request=\(Int(bytes.rounded()))"
        }
    }

    /// The process's counter, from the program that links the interposer: `start` zeroes and turns it on, `stop`
    /// turns it off and answers the allocations and the bytes since `start`.
    public struct Counter: Sendable {
        public var start: @Sendable () -> Void
        public var stop: @Sendable () -> (allocations: Int, bytes: Int)

        public init(
            start: @escaping @Sendable () -> Void,
            stop: @escaping @Sendable () -> (allocations: Int, bytes: Int)
        ) {
            self.start = start
            self.stop = stop
        }
    }

    /// `warm` purchases and reads first (the caches filled, SQLite's pages read, the log grown to its size), then
    /// `requests` of each counted: a consumable bought by a customer of its own, as `till bench submissions` sends it,
    /// then each of those customers read.
    public static func run(requests: Int, warm: Int, counter: Counter) async throws -> [Figure] {
        var quiet = Logger(label: "till.allocations")
        quiet.logLevel = .critical
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("till-allocations-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let simulator = try await Simulator.open(SimulatorConfiguration(), logger: quiet)
        let server = try await PurchaseServer.open(
            ServerConfiguration(
                database: try DatabaseConfiguration(parsing: directory.appendingPathComponent("till.sqlite").path),
                operatorToken: "allocations",
                sandboxJWSRoots: [simulator.signer.jwsAuthority.root],
                contentDirectory: directory.appendingPathComponent("content").path
            ),
            logger: quiet
        )
        let demo = try await DevelopmentSetup.prepare(server: server, simulator: simulator)
        let router = InProcessRouter(buildServerRouter(server), logger: quiet)
        let bodies = try await EventBenchmark.purchases(warm + requests, simulator, demo)
        let headers: HTTPFields = [.authorization: "Bearer \(demo.appKey)"]

        /// Sends `count` purchases from `offset`, then reads their customers; answers the two windows' counts.
        func round(_ offset: Int, _ count: Int, counted: Bool) async throws -> [Figure] {
            if counted { counter.start() }
            for index in offset..<(offset + count) {
                let reply = try await router.call(.post, "/v1/receipts", headers: headers, body: bodies[index])
                guard reply.status == 202 || reply.status == 200 else {
                    throw EventBenchmark.BenchmarkFailure(description: "a purchase answered \(reply.status)")
                }
            }
            let purchases = counted ? counter.stop() : (0, 0)
            if counted { counter.start() }
            for index in offset..<(offset + count) {
                let reply = try await router.call(.get, "/v1/customers/buyer-\(index)", headers: headers, body: [])
                guard reply.status == 200 else {
                    throw EventBenchmark.BenchmarkFailure(description: "a customer read answered \(reply.status)")
                }
            }
            let reads = counted ? counter.stop() : (0, 0)
            func figure(_ operation: String, _ counts: (allocations: Int, bytes: Int)) -> Figure {
                Figure(
                    operation: operation,
                    requests: count,
                    allocations: Double(counts.allocations) / Double(count),
                    bytes: Double(counts.bytes) / Double(count)
                )
            }
            return [figure("purchase", purchases), figure("customer_read", reads)]
        }

        do {
            _ = try await round(0, warm, counted: false)
            let figures = try await round(warm, requests, counted: true)
            await router.close()
            try await server.shutdown()
            try await simulator.shutdown()
            return figures
        } catch {
            await router.close()
            try? await server.shutdown()
            try? await simulator.shutdown()
            throw error
        }
    }
}
