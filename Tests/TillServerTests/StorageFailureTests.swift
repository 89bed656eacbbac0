import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing
import TillContract
import TillServer
import TillSimulator
import TillStorage
import TillTestSupport

/// Storage that fails under a running `till serve` is answered as what it is: `503 storageUnavailable` with
/// `Retry-After` (never a 500, never a 2xx for what was not stored), counted in `/metrics`, logged once per outage;
/// the server recovers by itself, every refused submission is accepted when resent, nothing acknowledged is lost,
/// and SIGTERM stops the server whatever the database is doing.
@Suite(
    .sharingTheMachine,
    .serialized,
    .timeLimit(.minutes(10)),
    .enabled(if: Prerequisite.tillExecutable.shouldRun, Comment(rawValue: Prerequisite.tillExecutable.skipMessage))
)
struct StorageFailureTests {
    /// An answer to a submission: its status, its error code, and `Retry-After`.
    struct Answer: CustomStringConvertible {
        var status: Int
        var code: String?
        var retryAfter: String?
        var description: String { "\(status) \(code ?? "") Retry-After: \(retryAfter ?? "none")" }
    }

    static func submit(_ jws: String, index: Int, world: World, to server: TillProcess, app: String, http: HTTPClient)
        async throws -> Answer
    {
        var request = HTTPClientRequest(url: server.base + "/v1/receipts")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(app)")
        request.headers.add(name: "Content-Type", value: "application/json")
        let body: [String: Any] = [
            "customerId": world.customer(of: index), "signedTransaction": jws, "idempotencyKey": "purchase-\(index)",
        ]
        request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        let response = try await http.execute(request, timeout: .seconds(60))
        let data = Data((try await response.body.collect(upTo: 1 << 22)).readableBytesView)
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        return Answer(
            status: Int(response.status.code),
            code: (object?["error"] as? [String: Any])?["code"] as? String,
            retryAfter: response.headers.first(name: "Retry-After")
        )
    }

    /// The value of a metric without labels in `/metrics`.
    static func metric(_ name: String, on server: TillProcess, http: HTTPClient) async throws -> Double? {
        let response = try await http.execute(HTTPClientRequest(url: server.base + "/metrics"), timeout: .seconds(30))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 22))
        let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    static func gems(of world: World, on server: TillProcess, app: String, http: HTTPClient) async throws -> Int {
        var total = 0
        for customer in world.customers {
            total += Int(try await world.customer(customer, on: server, app: app, http: http).balances["gems"] ?? 0)
        }
        return total
    }

    /// `GET /ready`'s status and its `status` field; `/health`'s status beside it.
    static func readiness(of server: TillProcess, http: HTTPClient) async throws -> (ready: Int, status: String?, health: Int) {
        let ready = try await http.execute(HTTPClientRequest(url: server.base + "/ready"), timeout: .seconds(30))
        let data = Data((try await ready.body.collect(upTo: 1 << 20)).readableBytesView)
        let status = ((try? JSONSerialization.jsonObject(with: data)) as? [String: Any])?["status"] as? String
        let health = try await http.execute(HTTPClientRequest(url: server.base + "/health"), timeout: .seconds(30))
        return (Int(ready.status.code), status, Int(health.status.code))
    }

    /// Sets the soft limit on the size of any file `process` writes (RLIMIT_FSIZE): past it, writes fail with EFBIG,
    /// as on a full disk. The hard limit stays unlimited, so the soft one can be raised again.
    static func limitFileSize(of server: TillProcess, to limit: String) async throws {
        let (status, output) = try await ChildProcess.run(
            "/usr/bin/env",
            ["prlimit", "--pid", "\(server.process.processIdentifier)", "--fsize=\(limit):unlimited"]
        )
        try #require(status == 0, "prlimit: \(output)")
    }

    @Test func aFullDiskIsAnswered503AndEverySubmissionIsAcceptedOnceSpaceIsBack() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("till-disk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let simulator = try await Simulator.open(SimulatorConfiguration(keys: .shared))
        let http = HTTPClient.shared
        try await withServices({ buildSimulatorApplication(simulator, port: 0, onServerRunning: $0) }) { port in
            let world = try await World.make(simulator: simulator, directory: directory, simulatorPort: port)
            let purchases = try await world.purchases(8)
            let server = try await TillProcess.start(
                world,
                environment: ["TILL_DATABASE_WAIT_SECONDS": "1", "TILL_CATCH_UP_INTERVAL_SECONDS": "0"]
            )
            do {
                let app = try await world.register(on: server, http: http)
                for index in 0..<3 {
                    let answer = try await Self.submit(purchases[index], index: index, world: world, to: server, app: app, http: http)
                    #expect(answer.status == 202 || answer.status == 200, "\(answer)")
                }

                // The disk fills: no file of the server can grow past 4 KiB (the database and its log are larger).
                try await Self.limitFileSize(of: server, to: "4096")
                for index in 3..<8 {
                    let answer = try await Self.submit(purchases[index], index: index, world: world, to: server, app: app, http: http)
                    #expect(answer.status == 503 && answer.code == "storageUnavailable", "\(answer)")
                    #expect(Int(answer.retryAfter ?? "") ?? 0 > 0, "\(answer)")
                }
                #expect(try await Self.metric("till_storage_available", on: server, http: http) == 0)
                #expect(try await Self.metric("till_storage_refused", on: server, http: http) ?? 0 >= 5)
                // A balancer stops sending it traffic; an orchestrator does not restart it.
                let outage = try await Self.readiness(of: server, http: http)
                #expect(outage.ready == 503 && outage.status == "storageUnavailable" && outage.health == 200, "\(outage)")
                // A queue's claim that finds nothing due commits without writing (the consumption worker's, every
                // 5 s): it proves nothing about the disk, and the outage goes on while the disk is full.
                try await Task.sleep(for: .seconds(6))
                #expect(try await Self.metric("till_storage_available", on: server, http: http) == 0)

                // Space comes back: the same submissions, resent, are accepted, without a restart.
                try await Self.limitFileSize(of: server, to: "unlimited")
                for index in 3..<8 {
                    let answer = try await Self.submit(purchases[index], index: index, world: world, to: server, app: app, http: http)
                    #expect(answer.status == 202 || answer.status == 200, "\(answer)")
                }
                try await waitUntil { try await Self.gems(of: world, on: server, app: app, http: http) == 800 }
                #expect(try await Self.metric("till_storage_available", on: server, http: http) == 1)
                let back = try await Self.readiness(of: server, http: http)
                #expect(back.ready == 200 && back.status == "ready", "\(back)")
                // One outage, logged once when it began and once when it ended, however many requests it refused.
                #expect(try await Self.metric("till_storage_outages", on: server, http: http) == 1)
                #expect(server.output.components(separatedBy: "storage unavailable:").count - 1 == 1, "\(server.output)")
                #expect(server.output.components(separatedBy: "storage available again").count - 1 == 1)
                #expect(!server.output.contains("internalError"))
            } catch {
                await server.stop()
                throw DeploymentFailure(error: error, server: server.output)
            }
            #expect(await server.stop() == 0)
        }
        try await simulator.shutdown()
    }

    @Test(.enabled(if: PrivatePostgres.prerequisite.shouldRun, Comment(rawValue: PrivatePostgres.prerequisite.skipMessage)))
    func postgreSQLStoppedAndRestartedUnderLoadLosesNothingAndSIGTERMEndsTheServer() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("till-pg-out-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let postgres = try await PrivatePostgres.start()
        let simulator = try await Simulator.open(SimulatorConfiguration(keys: .shared))
        let http = HTTPClient.shared
        do {
            try await withServices({ buildSimulatorApplication(simulator, port: 0, onServerRunning: $0) }) { port in
                let world = try await World.make(simulator: simulator, directory: directory, simulatorPort: port)
                let count = 60
                let purchases = try await world.purchases(count)
                let server = try await TillProcess.start(
                    world,
                    databaseURL: postgres.url,
                    environment: [
                        "TILL_DATABASE_WAIT_SECONDS": "1", "TILL_CATCH_UP_INTERVAL_SECONDS": "0",
                        "TILL_SHUTDOWN_GRACE_SECONDS": "5",
                    ]
                )
                do {
                    let app = try await world.register(on: server, http: http)
                    // 60 submissions at 10 a second; the database is away from the second to the fifth second.
                    let answers = try await withThrowingTaskGroup(of: (Int, Answer).self) { group in
                        for index in 0..<count {
                            group.addTask {
                                try await Task.sleep(for: .milliseconds(100 * index))
                                let answer = try await Self.submit(
                                    purchases[index], index: index, world: world, to: server, app: app, http: http
                                )
                                return (index, answer)
                            }
                        }
                        group.addTask {
                            try await Task.sleep(for: .seconds(1))
                            try await postgres.stop()
                            try await Task.sleep(for: .seconds(4))
                            try await postgres.startAgain()
                            return (-1, Answer(status: 0))
                        }
                        var answers: [Int: Answer] = [:]
                        for try await (index, answer) in group where index >= 0 { answers[index] = answer }
                        return answers
                    }
                    let refused = answers.filter { $0.value.status == 503 }.keys.sorted()
                    for (index, answer) in answers {
                        #expect([200, 202, 503].contains(answer.status), "submission \(index): \(answer)")
                        if answer.status == 503 {
                            #expect(answer.code == "storageUnavailable" && answer.retryAfter != nil, "\(answer)")
                        }
                    }
                    #expect(!refused.isEmpty, "the outage refused nothing: \(answers.values.map(\.description))")
                    // Each refused submission is accepted once resent (the same idempotency key).
                    for index in refused {
                        let answer = try await Self.submit(purchases[index], index: index, world: world, to: server, app: app, http: http)
                        #expect(answer.status == 202 || answer.status == 200, "resent \(index): \(answer)")
                    }
                    // Nothing acknowledged is lost, nothing is credited twice, and the queue resumed by itself.
                    try await waitUntil { try await Self.gems(of: world, on: server, app: app, http: http) == count * 100 }
                    let outages = try await Self.metric("till_storage_outages", on: server, http: http) ?? 0
                    #expect(outages >= 1 && outages <= 3, "outages \(outages)")
                    let logged = server.output.components(separatedBy: "storage unavailable:").count - 1
                    #expect(logged == Int(outages), "\(server.output.suffix(3000))")

                    #expect(try await Self.readiness(of: server, http: http).ready == 200)
                    // The database goes away for good: not ready (a one-row read does not answer), still alive.
                    try await postgres.stop()
                    let away = try await Self.readiness(of: server, http: http)
                    #expect(away.ready == 503 && away.status == "storageUnavailable" && away.health == 200, "\(away)")
                    // Then the operator stops the server: it exits within its grace.
                    let started = ContinuousClock.now
                    let status = await server.stop(grace: .seconds(30))
                    #expect(ContinuousClock.now - started < .seconds(16), "SIGTERM took \(ContinuousClock.now - started)")
                    #expect(status != 9, "the server had to be killed")
                } catch {
                    await server.stop()
                    throw DeploymentFailure(error: error, server: server.output)
                }
            }
        } catch {
            await postgres.remove()
            try? await simulator.shutdown()
            throw error
        }
        await postgres.remove()
        try await simulator.shutdown()
    }
}
