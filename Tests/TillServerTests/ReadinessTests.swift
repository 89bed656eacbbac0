import AsyncHTTPClient
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOHTTP1
import NIOPosix
import SQLKit
import Synchronization
import Testing
import TillLedger
import TillTestSupport

@testable import TillServer
@testable import TillStorage

/// `/health` is liveness and `/ready` says whether to send traffic: 503 while the database migrates, while storage
/// is down (`StorageFailureTests` takes it down under a live server) and while draining after SIGTERM.
@Suite(.sharingTheMachine, .serialized)
struct ReadinessTests {
    /// The front door alone, in each phase, in process.
    @Test(arguments: TestDatabase.all) func theFrontDoorAnswersEachPhase(_ database: TestDatabase) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let door = ServerFrontDoor()
            let app = Application(responder: door)
            try await app.test(.router) { client in
                // Opening: alive, not ready, and every route says why.
                #expect(try await client.call(.get, "/health").status == 200)
                let migrating = try await client.call(.get, "/ready")
                #expect(migrating.status == 503 && migrating.object["status"] as? String == "migrating")
                #expect(migrating.headers[.retryAfter] == "1" && migrating.headers[.cacheControl] == "no-store")
                let early = try await client.call(.get, "/v1/products", token: fixture.app.appKey)
                #expect(early.status == 503 && early.code == "starting", "\(early.status) \(early.code ?? "")")
                #expect(try await client.call(.post, "/ready").code == "starting")

                // Open: ready, and the routes are the server's.
                door.open(fixture.server)
                let ready = try await client.call(.get, "/ready")
                #expect(ready.status == 200 && ready.object["status"] as? String == "ready")
                #expect(try await client.call(.get, "/v1/products", token: fixture.app.appKey).status == 200)
                #expect(try await client.call(.get, "/v1/products").status == 401)
                #expect(try await client.call(.post, "/ready").status == 405)

                // Draining: not ready, while everything else still serves.
                door.drain()
                let draining = try await client.call(.get, "/ready")
                #expect(draining.status == 503 && draining.object["status"] as? String == "draining")
                #expect(try await client.call(.get, "/health").status == 200)
                #expect(try await client.call(.get, "/v1/products", token: fixture.app.appKey).status == 200)
            }
            // A stop that begins while the database still migrates stays a stop once it is open.
            let early = ServerFrontDoor()
            early.drain()
            try await Application(responder: early).test(.router) { client in
                let before = try await client.call(.get, "/ready")
                #expect(before.status == 503 && before.object["status"] as? String == "draining")
                early.open(fixture.server)
                let after = try await client.call(.get, "/ready")
                #expect(after.status == 503 && after.object["status"] as? String == "draining")
            }
        }
    }

    /// `till serve` as started by an operator: it listens while its database migrates (held here by another
    /// session's lock: SQLite's write lock, PostgreSQL's migration lock), becomes ready once migrated, and after
    /// SIGTERM answers `/ready` 503 for `shutdown.drain-seconds` while serving, then exits cleanly.
    // The time limits of this suite also run while a test waits for its share of the machine (PurchaseAllocationTests
    // ran out of 3 minutes so): they are 10 minutes, against a hang; each test bounds its own waits.
    @Test(
        .timeLimit(.minutes(10)),
        .enabled(if: Prerequisite.tillExecutable.shouldRun, Comment(rawValue: Prerequisite.tillExecutable.skipMessage)),
        arguments: TestDatabase.all
    )
    func tillServeIsNotReadyWhileMigratingNorWhileDraining(_ database: TestDatabase) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("till-ready-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let postgres = database == .postgres ? try await PrivatePostgres.start() : nil
        let url = postgres?.url ?? directory.appendingPathComponent("till.sqlite").path
        // Another session holds what the first migration waits for, until the test has seen the server wait.
        let holder = try await TillDatabase.open(try DatabaseConfiguration(parsing: url))
        let (released, release) = AsyncStream.makeStream(of: Void.self)
        let (held, holding) = AsyncStream.makeStream(of: Void.self)
        let hold = Task {
            try await holder.transaction { db in
                if holder.engine == .postgres {
                    let key = Int64(TillDatabase.lockKey("till_schema_migrations"))
                    try await db.raw("SELECT pg_advisory_xact_lock(\(literal: key))").run()
                } else {
                    // BEGIN IMMEDIATE took the write lock; a write keeps the transaction real.
                    try await db.raw("CREATE TABLE IF NOT EXISTS readiness_hold (n INTEGER)").run()
                }
                holding.yield()
                for await _ in released { break }
            }
        }
        var waiting = held.makeAsyncIterator()
        _ = await waiting.next()

        let port = try PrivatePostgres.freePort()
        let base = "http://127.0.0.1:\(port)"
        let serve = try await TillProcess.start(
            [
                "serve", "--mode", "production", "--port", "\(port)", "--operator-token", World.operatorToken,
                "--database-url", url, "--log-level", "notice",
            ],
            // Long enough a drain for two `till probe` processes to start and ask while it lasts: a debug build
            // under the whole suite took more than 3 s for them (2026-12-01).
            environment: ["TILL_CATCH_UP_INTERVAL_SECONDS": "0", "TILL_SHUTDOWN_DRAIN_SECONDS": "10"],
            directory: directory,
            base: base
        )
        let http = HTTPClient.shared
        func get(_ path: String) async throws -> (Int, [String: Any]) {
            let response = try await http.execute(HTTPClientRequest(url: base + path), timeout: .seconds(10))
            let data = Data((try await response.body.collect(upTo: 1 << 20)).readableBytesView)
            return (Int(response.status.code), (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:])
        }
        func eventually(_ what: String, _ check: () async throws -> Bool) async throws {
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                if (try? await check()) == true { return }
                try await Task.sleep(for: .milliseconds(50))
            }
            throw TestSupportFailure("never \(what):\n\(serve.output)")
        }
        do {
            try await eventually("listened") { try await get("/health").0 == 200 }
            let migrating = try await get("/ready")
            #expect(migrating.0 == 503 && migrating.1["status"] as? String == "migrating", "\(migrating)")
            let early = try await get("/v1/products")
            #expect(early.0 == 503 && (early.1["error"] as? [String: Any])?["code"] as? String == "starting")

            release.yield()
            try await hold.value
            try await eventually("became ready") { try await get("/ready").0 == 200 }
            #expect(try await get("/v1/products").0 == 401)
            // `till probe`, a container's health check, agrees; and says no where nothing listens.
            let till = try TillExecutable.require().path
            let probed = try await ChildProcess.run(till, ["probe", "--url", base])
            #expect(probed.status == 0 && probed.output.contains(#"200 {"status":"ready"}"#), "\(probed)")
            let nobody = try await ChildProcess.run(
                till,
                ["probe", "--url", "http://127.0.0.1:\(try PrivatePostgres.freePort())"]
            )
            #expect(nobody.status == 1 && nobody.output.contains("no answer"), "\(nobody)")

            serve.kill(SIGTERM)
            try await eventually("drained") { try await get("/ready").1["status"] as? String == "draining" }
            #expect(try await get("/health").0 == 200)
            #expect(try await get("/v1/products").0 == 401, "a route stopped serving while draining")
            let draining = try await ChildProcess.run(till, ["probe", "--url", base])
            #expect(draining.status == 1 && draining.output.contains("503"), "\(draining)")
            #expect(try await ChildProcess.run(till, ["probe", "--url", base, "--live"]).status == 0)
            #expect(await serve.exitStatus() == 0, "\(serve.output)")
            #expect(serve.output.contains("draining: /ready answers 503"))
            // Each probe's 503 is the answer it asked for: no error line for it (the log is at notice).
            #expect(!serve.output.contains("GET /ready 503"), "\(serve.output)")
        } catch {
            release.yield()
            await serve.stop()
            try? await holder.shutdown()
            await postgres?.remove()
            throw error
        }
        try await holder.shutdown()
        await postgres?.remove()
    }

    /// `till serve` on a database a newer release migrated exits with the reason, and writes nothing.
    @Test(
        .enabled(if: Prerequisite.tillExecutable.shouldRun, Comment(rawValue: Prerequisite.tillExecutable.skipMessage))
    )
    func tillServeRefusesADatabaseFromANewerRelease() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("till-newer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("till.sqlite").path
        let server = try await PurchaseServer.open(
            ServerConfiguration(database: .sqlite(path: path), operatorToken: World.operatorToken)
        )
        try await server.shutdown()
        let database = try await TillDatabase.open(.sqlite(path: path))
        try await database.sql.raw(
            "INSERT INTO till_schema_migrations (schema, id, applied_at) VALUES ('server', '999-from-the-future', 0)"
        ).run()
        func rows() async throws -> [String] {
            try await database.sql.raw("SELECT schema, id FROM till_schema_migrations ORDER BY schema, id").all()
                .map {
                    "\(try $0.decode(column: "schema", as: String.self)) \(try $0.decode(column: "id", as: String.self))"
                }
        }
        let before = try await rows()
        let serve = try await TillProcess.start(
            [
                "serve", "--mode", "production", "--port", "0", "--operator-token", World.operatorToken,
                "--database-url", path,
            ],
            directory: directory,
            base: "unused"
        )
        #expect(await serve.exitStatus() == 1)
        #expect(serve.output.contains("newerSchema") && serve.output.contains("999-from-the-future"), "\(serve.output)")
        #expect(try await rows() == before)
        try await database.shutdown()
    }

    /// A port already taken ends `till serve` at once with the reason, though the database opened behind the
    /// listener: nothing waits for a listener that never started.
    @Test(
        .timeLimit(.minutes(10)),
        .enabled(if: Prerequisite.tillExecutable.shouldRun, Comment(rawValue: Prerequisite.tillExecutable.skipMessage))
    )
    func aTakenPortEndsTillServeAtOnce() async throws {
        try await Self.withProductionServe("port") { first, port in
            try await Self.secondServeEndsAtOnce(beside: first, port: port)
        }
    }

    private static func secondServeEndsAtOnce(beside first: TillProcess, port: Int) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("till-port-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let started = ContinuousClock.now
        let second = try await TillProcess.start(
            [
                "serve", "--mode", "production", "--port", String(port), "--operator-token", World.operatorToken,
                "--database-url", directory.appendingPathComponent("second.sqlite").path,
            ],
            directory: directory,
            base: "unused"
        )
        #expect(await second.exitStatus() == 1)
        #expect(ContinuousClock.now - started < .seconds(20), "it took \(ContinuousClock.now - started)")
        #expect(second.output.contains("Address already in use"), "\(second.output)")
        // Which listener, where, and the setting that moves it.
        #expect(
            second.output.contains("Error: the server cannot listen on 127.0.0.1:\(port)")
                && second.output.contains("--port"),
            "\(second.output)"
        )
        #expect(await first.stop() == 0)
    }

    /// A setting `till serve` cannot start with ends it with status 64 and the setting's message alone: not a default
    /// in its place (`TILL_HTTP_PORT=abc` once listened on 8080), and not the parser's usage lines, which would say
    /// the command line was wrong.
    @Test(
        .timeLimit(.minutes(10)),
        .enabled(if: Prerequisite.tillExecutable.shouldRun, Comment(rawValue: Prerequisite.tillExecutable.skipMessage))
    )
    func aBadSettingEndsTillServeWithItsMessage() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("till-bad-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try await TillProcess.start(
            ["serve", "--mode", "production", "--operator-token", World.operatorToken, "--database-url", ":memory:"],
            environment: ["TILL_HTTP_PORT": "abc"],
            directory: directory,
            base: "unused"
        )
        #expect(await serve.exitStatus() == 64)
        #expect(serve.output.contains("Error: http.port is a whole number from 0 to 65535, not abc"), "\(serve.output)")
        #expect(!serve.output.contains("Usage:"), "\(serve.output)")
    }

    /// `till serve` closes a connection that sends nothing for `http.idle-timeout-seconds` while the server waits for
    /// it: opened and silent, stopped in the middle of a request's head, or in the middle of a body (a slowloris
    /// client held connections and their buffers for as long as it liked). A HEAD is answered as its GET without the
    /// body, on the wire: the next answer on the connection is read whole after it.
    @Test(
        .timeLimit(.minutes(10)),
        .enabled(if: Prerequisite.tillExecutable.shouldRun, Comment(rawValue: Prerequisite.tillExecutable.skipMessage))
    )
    func aConnectionThatStallsIsClosedAfterTheIdleTimeout() async throws {
        try await Self.withProductionServe("idle", environment: ["TILL_HTTP_IDLE_TIMEOUT_SECONDS": "1"]) {
            try await Self.stallsAreClosed(serve: $0, port: $1)
        }
    }

    private static func stallsAreClosed(serve: TillProcess, port: Int) async throws {
        let stalls = [
            ("silent", ""),
            ("half a head", "GET /health HTTP/1.1\r\nHost: till\r\n"),
            (
                "half a body",
                "POST /admin/v1/apps HTTP/1.1\r\nHost: till\r\nAuthorization: Bearer \(World.operatorToken)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"bundleId\":"
            ),
        ]
        for (what, bytes) in stalls {
            let connection = try await RawConnection.open(port: port)
            if !bytes.isEmpty { try await connection.send(bytes) }
            let closedAfter = await connection.closedAfter(atMost: .seconds(20))
            #expect(
                closedAfter.map { $0 >= .milliseconds(900) && $0 < .seconds(10) } == true,
                "\(what): \(String(describing: closedAfter))"
            )
        }
        // HEAD then GET on one connection: the first answer has the GET's length and no body, so the second one
        // is read from the next byte.
        let connection = try await RawConnection.open(port: port)
        try await connection.send(
            "HEAD /health HTTP/1.1\r\nHost: till\r\n\r\nGET /health HTTP/1.1\r\nHost: till\r\n\r\n"
        )
        _ = await connection.closedAfter(atMost: .seconds(20))
        let answers = connection.received
        let parts = answers.components(separatedBy: "HTTP/1.1 200 OK")
        #expect(parts.count == 3, "\(answers)")
        #expect(
            parts.count == 3 && parts[1].contains("Content-Length: 15") && parts[1].hasSuffix("\r\n\r\n"),
            "\(answers)"
        )
        #expect(answers.hasSuffix(#"{"status":"ok"}"#), "\(answers)")
        #expect(await serve.stop() == 0)
    }
}

extension ReadinessTests {
    /// A request NIO's parser refuses never reaches a route: Hummingbird answered it with an empty 400. `till serve`
    /// answers it as every refusal is, JSON with a stable code, and 431 for headers over the limit; the connection
    /// closes after the answer, and the server goes on serving.
    @Test(
        .timeLimit(.minutes(10)),
        .enabled(if: Prerequisite.tillExecutable.shouldRun, Comment(rawValue: Prerequisite.tillExecutable.skipMessage))
    )
    func aRequestThatIsNotHTTPIsAnsweredAsEveryRefusalIs() async throws {
        try await Self.withProductionServe("framing") { try await Self.malformedRequestsAreRefused(serve: $0, port: $1) }
    }

    private static func malformedRequestsAreRefused(serve: TillProcess, port: Int) async throws {
        let requests = [
            ("a negative length", "POST /v1/receipts HTTP/1.1\r\nHost: till\r\nContent-Length: -3\r\n\r\n", 400,
                "malformedRequest", "its Content-Length is not a length"),
            ("a header of 81 KiB", "GET /health HTTP/1.1\r\nHost: till\r\nX-Big: " + String(repeating: "a", count: 81 * 1024)
                + "\r\n\r\n", 431, "headersTooLarge", "over the server's limit"),
            ("a space in a header's name", "GET /health HTTP/1.1\r\nHost: till\r\nX Y: 1\r\n\r\n", 400,
                "malformedRequest", "a header's name or value"),
        ]
        for (what, bytes, status, code, words) in requests {
            let connection = try await RawConnection.open(port: port)
            try await connection.send(bytes)
            #expect(await connection.closedAfter(atMost: .seconds(20)) != nil, "\(what): the connection stayed open")
            let answer = connection.received
            let parts = answer.components(separatedBy: "\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 \(status) "), "\(what): \(answer)")
            #expect(parts.first?.contains("Content-Type: application/json") == true, "\(what): \(answer)")
            let error = parts.count == 2
                ? (try? JSONSerialization.jsonObject(with: Data(parts[1].utf8))) as? [String: [String: String]] : nil
            #expect(error?["error"]?["code"] == code, "\(what): \(answer)")
            #expect(error?["error"]?["message"]?.contains(words) == true, "\(what): \(answer)")
        }
        // Behind a good request in the same packet: its answer first, whole, then the refusal (NIO reads ahead, so
        // the parser's error passes while the first request is answered).
        let pipelined = try await RawConnection.open(port: port)
        try await pipelined.send("GET /health HTTP/1.1\r\nHost: till\r\n\r\nGET /health HTTP/1.1\r\nX Y: 1\r\n\r\n")
        _ = await pipelined.closedAfter(atMost: .seconds(20))
        let both = pipelined.received
        #expect(both.hasPrefix("HTTP/1.1 200 OK") && both.contains(#"{"status":"ok"}HTTP/1.1 400 Bad Request"#), "\(both)")
        #expect(both.hasSuffix(#"a header's name or value holds a character HTTP does not allow"}}"#), "\(both)")
        // A well-formed request still gets its answer, on a new connection.
        let connection = try await RawConnection.open(port: port)
        try await connection.send("GET /health HTTP/1.1\r\nHost: till\r\nConnection: close\r\n\r\n")
        _ = await connection.closedAfter(atMost: .seconds(20))
        #expect(connection.received.hasPrefix("HTTP/1.1 200 OK"), "\(connection.received)")
        #expect(await serve.stop() == 0)
    }
}

extension ReadinessTests {
    /// `till serve` in production mode on a port of its own choosing, its SQLite database in a new folder that goes
    /// afterwards; `body` gets the process and the port it listens on.
    static func withProductionServe(
        _ name: String,
        environment: [String: String] = [:],
        _ body: (TillProcess, Int) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("till-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try await TillProcess.start(
            [
                "serve", "--mode", "production", "--port", "0", "--operator-token", World.operatorToken,
                "--database-url", directory.appendingPathComponent("till.sqlite").path,
            ],
            environment: environment,
            directory: directory
        )
        try await body(serve, try #require(serve.base.split(separator: ":").last.flatMap { Int($0) }))
    }
}

/// A TCP connection that sends what it is given and keeps what it receives, to see what the server does with bytes no
/// HTTP client sends (a request stopped halfway).
final class RawConnection: Sendable {
    private let channel: any Channel
    private let collector: Collector

    private final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let text = Mutex("")
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = Self.unwrapInboundIn(data)
            text.withLock { $0 += String(buffer: buffer) }
        }
    }

    private init(channel: any Channel, collector: Collector) {
        self.channel = channel
        self.collector = collector
    }

    static func open(port: Int) async throws -> RawConnection {
        let collector = Collector()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(collector) }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
        return RawConnection(channel: channel, collector: collector)
    }

    func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text)).get()
    }

    /// What the server sent until now.
    var received: String { collector.text.withLock { $0 } }

    /// How long after this call the server closed the connection; nil when it had not after `limit` (this side
    /// closes it then).
    func closedAfter(atMost limit: Duration) async -> Duration? {
        let start = ContinuousClock.now
        let giveUp = channel.eventLoop.scheduleTask(in: TimeAmount(limit)) { self.channel.close(promise: nil) }
        try? await channel.closeFuture.get()
        let elapsed = ContinuousClock.now - start
        giveUp.cancel()
        return elapsed < limit ? elapsed : nil
    }
}
