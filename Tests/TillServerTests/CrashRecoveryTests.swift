import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import SQLKit
import SwiftASN1
import Testing
import TillAppStore
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillLedger
import TillSimulator
import TillStorage
import TillTestSupport
import X509

@testable import TillServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The real `till serve` process, killed and stopped in the middle of work: every submission it accepted is
/// confirmed once, after restarts, with no duplicate ledger row and no double credit.
@Suite(.sharingTheMachine, .serialized, .timeLimit(.minutes(10)))
struct CrashRecoveryTests {
    @Test func aSecondServerOnTheSameSQLiteFileIsRefusedAndClaimsOfAStoppedOneAreReleased() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = ServerConfiguration(
            database: .sqlite(path: directory.appendingPathComponent("till.sqlite").path),
            operatorToken: "op",
            contentDirectory: directory.appendingPathComponent("content").path
        )
        let first = try await PurchaseServer.open(configuration)
        await #expect {
            _ = try await PurchaseServer.open(configuration)
        } throws: { ($0 as? QueueRefusal)?.reason == .databaseInUse }
        // A claim as a worker killed mid-attempt leaves it: it would block the submission for minutes.
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try await first.database.sql.raw(
            """
            INSERT INTO srv_submissions (id, bundle_id, customer_id, kind, environment, state,
                attempts, transaction_ids, created_at, updated_at)
            VALUES ('s1', 'b', 'c', 'appReceipt', 'Sandbox', 'pending', 0, '[]', \(bind: now), \(bind: now))
            """
        ).run()
        try await first.database.sql.raw(
            """
            INSERT INTO srv_jobs (kind, job_key, state, queue_group, position, attempts, due_at, claimed_until,
                created_at, updated_at)
            VALUES ('confirmation', 's1', 'queued', '', 0, 1, \(bind: now), \(bind: now + 600_000), \(bind: now),
                \(bind: now))
            """
        ).run()
        try await first.shutdown()

        let second = try await PurchaseServer.open(configuration)
        let claimed = try await second.database.sql.raw("SELECT claimed_until FROM srv_jobs").first()
        #expect(try claimed?.decodeNil(column: "claimed_until") == true)
        try await second.shutdown()
    }

    @Test(
        .enabled(if: Prerequisite.tillExecutable.shouldRun, Comment(rawValue: Prerequisite.tillExecutable.skipMessage))
    )
    func killedAndStoppedServersLoseNoAcceptedSubmission() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let simulator = try await Simulator.open(SimulatorConfiguration(keys: .shared))
        // Apple is slow, so that confirmations are under way when the server is killed.
        simulator.faults.add(try FaultRule(parsing: "*:serverAPI:latency=0.3-1.2"))
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        try await withServices({ buildSimulatorApplication(simulator, port: 0, onServerRunning: $0) }) { port in
            let world = try await World.make(simulator: simulator, directory: directory, simulatorPort: port)
            let count = 60
            let purchases = try await world.purchases(count)

            // 1. Submissions arrive; the server is killed (SIGKILL) while they and their confirmations are under way.
            let first = try await TillProcess.start(world)
            let app = try await world.register(on: first, http: http)
            let accepted = Outcomes()
            await withTaskGroup(of: Void.self) { group in
                for (index, purchase) in purchases.enumerated() {
                    group.addTask {
                        let status = try? await world.submit(purchase, index: index, to: first, app: app, http: http)
                        accepted.record(index, status: status ?? 0)
                    }
                    try? await Task.sleep(for: .milliseconds(15))
                    if index == count / 2 {
                        // Killed once a quarter is acknowledged, not after a fixed time: on a loaded machine (or
                        // PostgreSQL) fewer than that may be answered when the thirtieth is sent.
                        try? await waitUntil { accepted.accepted.count >= count / 4 }
                        first.kill(SIGKILL)
                    }
                }
            }
            #expect(await first.exitStatus() == SIGKILL)
            #expect(accepted.accepted.count >= count / 4, "the first server accepted \(accepted.accepted.count)")

            // 2. Restarted on the same file, it resumes; the app resends what was never acknowledged (same
            //    idempotency keys, as TillClient's outbox does). SIGTERM arrives while confirmations are in flight.
            let second = try await TillProcess.start(world)
            #expect(try await world.app(on: second, http: http, key: app) == app)
            for index in 0..<count where !accepted.accepted.contains(index) {
                let status = try await world.submit(purchases[index], index: index, to: second, app: app, http: http)
                #expect(status == 202 || status == 200, "resend \(index): \(status)")
            }
            try await Task.sleep(for: .milliseconds(300))
            // A graceful stop: the attempts under way finish and the process exits cleanly (a hang is the suite's
            // time limit's to catch, not a timed assertion's).
            second.kill(SIGTERM)
            #expect(await second.exitStatus() == 0)

            print(
                "crash recovery: \(accepted.accepted.count) of \(count) acknowledged before SIGKILL, "
                    + "\(count - accepted.accepted.count) resent after the restart, SIGTERM with confirmations in flight"
            )

            // 3. A third start finishes the work.
            let third = try await TillProcess.start(world)
            try await world.waitUntilAllConfirmed(count, on: third, http: http)
            for customer in world.customers {
                let view = try await world.customer(customer, on: third, app: app, http: http)
                let expected = purchases.indices.filter { world.customer(of: $0) == customer }.count
                #expect(view.balances == ["gems": Int64(100 * expected)], "\(customer)")
                // The view lists a customer's latest consumables (CustomerSnapshot.recentConsumables); the books below
                // count every one.
                #expect(
                    view.purchases.count == min(expected, CustomerSnapshot.recentConsumables)
                        && view.purchases.allSatisfy { $0.confirmed }
                )
            }
            third.kill(SIGTERM)
            #expect(await third.exitStatus() == 0)

            // The books: one submission per purchase, one ledger row and one finance record per transaction.
            let database = try await TillDatabase.open(world.database)
            func number(_ query: SQLQueryString) async throws -> Int {
                try await database.sql.raw(query).first()?.decode(column: "n", as: Int.self) ?? -1
            }
            #expect(try await number("SELECT COUNT(*) AS n FROM srv_submissions") == count)
            #expect(try await number("SELECT COUNT(*) AS n FROM srv_submissions WHERE state = 'confirmed'") == count)
            #expect(try await number("SELECT COUNT(*) AS n FROM srv_transactions") == count)
            #expect(try await number("SELECT COUNT(DISTINCT transaction_id) AS n FROM srv_transactions") == count)
            #expect(try await number("SELECT COUNT(*) AS n FROM srv_finance") == count)
            try await database.shutdown()
        }
        try await http.shutdown()
        try await simulator.shutdown()
    }

    func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("till-crash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// Which submissions a server answered 2xx.
final class Outcomes: @unchecked Sendable {
    private let lock = NSLock()
    private var indices: Set<Int> = []
    var accepted: Set<Int> { lock.withLock { indices } }
    func record(_ index: Int, status: Int) {
        guard (200..<300).contains(status) else { return }
        lock.withLock { _ = indices.insert(index) }
    }
}

/// The simulator side and what every `till serve` start shares: the database file, the sandbox root.
struct World: Sendable {
    var simulator: Simulator
    var simulatorPort: Int
    var directory: URL
    var rootsFile: String
    var simulatorApp: SimApp
    var device: String
    var customers = ["ana", "ben", "cyd"]

    static let operatorToken = "op-crash-recovery-0123456789"

    var database: DatabaseConfiguration { .sqlite(path: directory.appendingPathComponent("till.sqlite").path) }

    static func make(simulator: Simulator, directory: URL, simulatorPort: Int) async throws -> World {
        let app = try await simulator.appStoreConnect.createApp(AppInput(bundleId: "com.example.crash", name: "Crash"))
        _ = try await simulator.appStoreConnect.createProduct(
            appAppleId: app.appAppleId,
            ProductInput(productId: "gems.100", type: .consumable, price: 990, title: "100 Gems")
        )
        let account = try await simulator.appStoreConnect.createAccount(AccountInput(environment: "Sandbox"))
        let device = try await simulator.appStoreConnect.createDevice(accountId: account.id, DeviceInput())
        let rootsFile = directory.appendingPathComponent("sandbox-root.pem").path
        try (try simulator.signer.jwsAuthority.root.serializeAsPEM().pemString + "\n")
            .write(toFile: rootsFile, atomically: true, encoding: .utf8)
        return World(
            simulator: simulator,
            simulatorPort: simulatorPort,
            directory: directory,
            rootsFile: rootsFile,
            simulatorApp: app,
            device: device.id
        )
    }

    func customer(of index: Int) -> String { customers[index % customers.count] }

    func purchases(_ count: Int) async throws -> [String] {
        var made: [String] = []
        for _ in 0..<count {
            let purchase = try await simulator.payments.addPayment(
                PaymentRequest(deviceId: device, bundleId: simulatorApp.bundleId, productId: "gems.100"),
                environment: .sandbox
            )
            made.append(try #require(purchase.signedTransaction))
        }
        return made
    }

    /// Creates the app and its product through the admin API; returns the app key.
    func register(on server: TillProcess, http: HTTPClient) async throws -> String {
        let key = try await simulator.appStoreConnect.createAPIKey(appAppleId: simulatorApp.appAppleId)
        let created = try await send(
            http,
            .POST,
            server.base + "/admin/v1/apps",
            token: World.operatorToken,
            [
                "bundleId": simulatorApp.bundleId, "appAppleId": simulatorApp.appAppleId, "name": "Crash",
                "sharedSecrets": [simulatorApp.sharedSecret], "apiKeyId": key.keyId, "apiIssuerId": key.issuerId,
                "apiPrivateKey": key.privateKey, "acceptSandbox": true,
            ]
        )
        #expect(created.0 == 201)
        let product = try await send(
            http,
            .PUT,
            server.base + "/admin/v1/apps/\(simulatorApp.bundleId)/products/gems.100",
            token: World.operatorToken,
            ["type": "consumable", "credits": ["gems": 100], "price": 990, "currency": "USD"]
        )
        #expect(product.0 == 200 || product.0 == 201)
        return try #require(created.1["appKey"] as? String)
    }

    /// The app, as a restarted server still knows it.
    func app(on server: TillProcess, http: HTTPClient, key: String) async throws -> String {
        let found = try await send(
            http,
            .GET,
            server.base + "/admin/v1/apps/\(simulatorApp.bundleId)",
            token: World.operatorToken
        )
        #expect(found.0 == 200 && found.1["appKey"] as? String == key)
        return key
    }

    func submit(_ jws: String, index: Int, to server: TillProcess, app: String, http: HTTPClient) async throws -> Int {
        try await send(
            http,
            .POST,
            server.base + "/v1/receipts",
            token: app,
            ["customerId": customer(of: index), "signedTransaction": jws, "idempotencyKey": "purchase-\(index)"]
        ).0
    }

    func customer(_ id: String, on server: TillProcess, app: String, http: HTTPClient) async throws -> CustomerView {
        var request = HTTPClientRequest(url: server.base + "/v1/customers/\(id)")
        request.headers.add(name: "Authorization", value: "Bearer \(app)")
        let response = try await http.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 22)
        return try JSONDecoder().decode(CustomerView.self, from: Data(body.readableBytesView))
    }

    func waitUntilAllConfirmed(_ count: Int, on server: TillProcess, http: HTTPClient) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        var confirmed = 0
        while ContinuousClock.now < deadline {
            var request = HTTPClientRequest(url: server.base + "/admin/v1/submissions?state=confirmed")
            request.headers.add(name: "Authorization", value: "Bearer \(World.operatorToken)")
            let response = try await http.execute(request, timeout: .seconds(30))
            let body = Data((try await response.body.collect(upTo: 1 << 24)).readableBytesView)
            confirmed = ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any])?["total"] as? Int ?? 0
            if confirmed >= count { return }
            try await Task.sleep(for: .milliseconds(200))
        }
        Issue.record("only \(confirmed) of \(count) submissions confirmed after a minute")
    }

    func send(
        _ http: HTTPClient,
        _ method: HTTPMethod,
        _ url: String,
        token: String,
        _ body: [String: Any]? = nil
    ) async throws -> (Int, [String: Any]) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        }
        let response = try await http.execute(request, timeout: .seconds(30))
        let data = Data((try await response.body.collect(upTo: 1 << 22)).readableBytesView)
        return (
            Int(response.status.code),
            (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        )
    }
}

extension TillProcess {
    /// `till serve --mode production` on the world's database file, pointed at the in-test simulator.
    ///
    /// - Parameters:
    ///   - databaseURL: another database than the world's SQLite file.
    ///   - environment: more settings.
    static func start(
        _ world: World,
        databaseURL: String? = nil,
        environment extra: [String: String] = [:]
    ) async throws -> TillProcess {
        let simulator = "http://127.0.0.1:\(world.simulatorPort)"
        return try await start(
            [
                "serve", "--mode", "production", "--port", "0", "--operator-token", World.operatorToken,
                "--database-url", databaseURL ?? world.directory.appendingPathComponent("till.sqlite").path,
                "--log-level", "warning",
            ],
            environment: [
                "TILL_APPLE_VERIFY_RECEIPT_PRODUCTION": simulator + "/production/verifyReceipt",
                "TILL_APPLE_VERIFY_RECEIPT_SANDBOX": simulator + "/sandbox/verifyReceipt",
                "TILL_APPLE_SERVER_API_PRODUCTION": simulator + "/production",
                "TILL_APPLE_SERVER_API_SANDBOX": simulator + "/sandbox",
                "TILL_APPLE_SANDBOX_ROOTS": world.rootsFile,
                "TILL_CONTENT_DIRECTORY": world.directory.appendingPathComponent("content").path,
                "TILL_CONFIRMATION_TIMEOUT_SECONDS": "10",
            ].merging(extra) { $1 }
        )
    }
}
