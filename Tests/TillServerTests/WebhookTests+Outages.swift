import AsyncHTTPClient
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import SQLKit
import ServiceLifecycle
import Testing
import TillAppStore
import TillContract
import TillCore
import TillDevelopment
import TillLedger
import TillStorage
import TillTestSupport
import TillWebhooks

@testable import TillServer
@testable import TillSimulator

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// At least once and in order for each customer, through what goes wrong: a receiver down for a day, a server killed
/// while it delivers, two servers sharing the queue on PostgreSQL.
extension WebhookTests {
    /// Each customer's events, in the order their first successful delivery arrived: the order must be the feed's.
    static func outOfOrder(_ receiver: WebhookReceiver) throws -> [String] {
        var problems: [String] = []
        var last: [String: Int64] = [:]
        for event in try received(receiver) {
            guard let customer = event.customer?.id else { continue }
            if let before = last[customer], before > event.sequence {
                problems.append("\(customer): \(event.sequence) after \(before)")
            }
            last[customer] = event.sequence
        }
        return problems
    }

    @Test(arguments: TestDatabase.all) func aReceiverDownForADayGetsEverythingAfterwardsInOrder(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(
            database: database,
            followSimulatorClock: true,
            configure: { $0.webhooks = WebhookSettings(allowHTTPToLoopback: true, timeout: .seconds(3)) }
        ) { fixture in
            let receiver = WebhookReceiver()
            receiver.behaviour = .fail(status: 503)
            try await Self.withWebhooks(fixture, receiver: receiver) { receiver, endpoint in
                let customers = ["ann", "ben", "cat"]
                // A day of changes while the receiver answers 503, each hour's retries due as simulated time passes.
                for hour in 0..<24 {
                    for customer in customers {
                        _ = try await fixture.server.ledger.adjustBalance(
                            bundleId: ServerFixture.bundleId,
                            customerId: customer,
                            credit: "gems",
                            delta: 1,
                            requestId: "hour-\(hour)",
                            note: "hourly"
                        )
                    }
                    _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 3600)
                    try await Task.sleep(for: .milliseconds(150))
                }
                let failed = receiver.count
                let deliveredWhileDown = try Self.received(receiver)
                #expect(failed > 0 && deliveredWhileDown.isEmpty)
                // Back up: the next attempt (within its back-off, at most ten hours) gets through, and everything that
                // waited is sent at once.
                receiver.behaviour = .accept
                for _ in 0..<12 where try Self.received(receiver).count < 72 {
                    _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 3600)
                    try await Task.sleep(for: .milliseconds(300))
                }
                try await waitUntil { try Self.received(receiver).count == 72 }
                let disorder = try Self.outOfOrder(receiver)
                #expect(disorder.isEmpty, "\(disorder)")
                #expect(receiver.deliveries.allSatisfy { $0.verified })
                let dead = try await fixture.server.webhookHistory.deliveries(
                    bundleId: ServerFixture.bundleId,
                    endpointId: endpoint.endpoint.id,
                    state: .deadLettered
                )
                #expect(dead.total == 0)
                print("a day down: \(failed) attempts refused, then all 72 events delivered in order")
            }
        }
    }

    /// Two servers share one PostgreSQL database and its queue: each event is delivered once to the endpoint (a
    /// second time only with the same webhook-id, when a lease ran out), and never out of order for a customer.
    @Test(.enabled(if: Prerequisite.postgres.shouldRun, Comment(rawValue: Prerequisite.postgres.skipMessage)))
    func twoServersOnPostgreSQLDeliverEachEventOnceInOrder() async throws {
        try await ServerFixture.run(database: .postgres, configure: Self.loopback) { fixture in
            let second = try await PurchaseServer.open(fixture.server.configuration)
            let receiver = WebhookReceiver()
            try await withServices({ _ in
                ServiceGroup(
                    configuration: .init(
                        services: [WebhookWorker(server: second), ConfirmationWorker(server: second)],
                        gracefulShutdownSignals: [],
                        logger: .init(label: "second")
                    )
                )
            }) { _ in
                try await Self.withWebhooks(fixture, receiver: receiver) { receiver, endpoint in
                    let customers = ["ann", "ben", "cat", "dan"]
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for (index, server) in [fixture.server, second].enumerated() {
                            group.addTask {
                                for round in 0..<15 {
                                    for customer in customers {
                                        _ = try await server.ledger.adjustBalance(
                                            bundleId: ServerFixture.bundleId,
                                            customerId: customer,
                                            credit: "gems",
                                            delta: 1,
                                            requestId: "server-\(index)-\(round)",
                                            note: "load"
                                        )
                                    }
                                }
                            }
                        }
                        try await group.waitForAll()
                    }
                    let feed = try await Self.events(fixture.server)
                    #expect(feed.count == 120)
                    try await waitUntil { try Self.received(receiver).count == feed.count }
                    let ids = receiver.deliveries.map(\.id)
                    let twice = ids.count - Set(ids).count
                    #expect(Set(ids) == Set(feed.map(\.id)))
                    let disorder = try Self.outOfOrder(receiver)
                    #expect(disorder.isEmpty, "\(disorder)")
                    // One delivery per event and endpoint: the two servers never both dispatched one. (A delivery sent at
                    // dispatch is written once its attempt has ended, just after the receiver has it.)
                    func rows() async throws -> (all: Int, events: Int) {
                        let row = try await fixture.server.database.sql.raw(
                            "SELECT COUNT(*) AS n, COUNT(DISTINCT event_sequence) AS d FROM srv_webhook_deliveries"
                        ).first()
                        return (
                            try row?.decode(column: "n", as: Int.self) ?? 0,
                            try row?.decode(column: "d", as: Int.self) ?? 0
                        )
                    }
                    try await waitUntil { try await rows().events == 120 }
                    try await Task.sleep(for: .milliseconds(200))
                    let written = try await rows()
                    #expect(written.all == 120 && written.events == 120, "\(written)")
                    print("two servers: 120 events, \(ids.count) requests, \(twice) sent twice (same webhook-id)")
                    _ = endpoint
                }
            }
            try await second.shutdown()
        }
    }

    /// The real `till serve`, killed (SIGKILL) while it delivers: after a restart every event is delivered, none out
    /// of order for its customer.
    @Test(
        .enabled(if: Prerequisite.tillExecutable.shouldRun, Comment(rawValue: Prerequisite.tillExecutable.skipMessage)),
        .timeLimit(.minutes(10))
    )
    func aServerKilledWhileDeliveringLosesAndReordersNothing() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("till-webhooks-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let simulator = try await Simulator.open(SimulatorConfiguration(keys: .shared))
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let receiver = WebhookReceiver()
        try await withServices({ buildSimulatorApplication(simulator, port: 0, onServerRunning: $0) }) { port in
            try await withServices({ receiver.application(onServerRunning: $0) }) { receiverPort in
                let world = try await World.make(simulator: simulator, directory: directory, simulatorPort: port)
                let count = 60
                let purchases = try await world.purchases(count)
                let environment = [
                    "TILL_WEBHOOKS_ALLOW_HTTP_LOOPBACK": "true", "TILL_WEBHOOKS_RETRY_SCHEDULE_SECONDS": "0.2,0.5",
                ]
                let first = try await TillProcess.start(world, environment: environment)
                let app = try await world.register(on: first, http: http)
                let created = try await world.send(
                    http,
                    .POST,
                    first.base + "/admin/v1/apps/\(world.simulatorApp.bundleId)/webhooks",
                    token: World.operatorToken,
                    ["url": "http://127.0.0.1:\(receiverPort)/till"]
                )
                #expect(created.0 == 201)
                receiver.secret = try #require(created.1["secret"] as? String)
                let accepted = Outcomes()
                await withTaskGroup(of: Void.self) { group in
                    for (index, purchase) in purchases.enumerated() {
                        group.addTask {
                            let status = try? await world.submit(
                                purchase,
                                index: index,
                                to: first,
                                app: app,
                                http: http
                            )
                            accepted.record(index, status: status ?? 0)
                        }
                        try? await Task.sleep(for: .milliseconds(15))
                        // Killed once deliveries are under way.
                        if index == count / 2 {
                            _ = try? await waitUntil(timeout: .seconds(10)) { receiver.count > 0 }
                            first.kill(SIGKILL)
                        }
                    }
                }
                #expect(await first.exitStatus() == SIGKILL)
                let before = receiver.count

                let second = try await TillProcess.start(world, environment: environment)
                for index in 0..<count where !accepted.accepted.contains(index) {
                    _ = try await world.submit(purchases[index], index: index, to: second, app: app, http: http)
                }
                try await world.waitUntilAllConfirmed(count, on: second, http: http)
                // Every event of the feed reaches the receiver.
                let feed = try await Self.feed(of: second, bundleId: world.simulatorApp.bundleId, http: http)
                #expect(feed.count == 2 * count, "a purchase and its confirmation each")
                try await waitUntil(timeout: .seconds(60)) {
                    Set(try Self.received(receiver).map(\.id)).isSuperset(of: feed.map(\.id))
                }
                let disorder = try Self.outOfOrder(receiver)
                #expect(disorder.isEmpty, "\(disorder)")
                #expect(receiver.deliveries.allSatisfy { $0.verified })
                let ids = receiver.deliveries.map(\.id)
                print(
                    "killed while delivering: \(before) requests before SIGKILL, \(ids.count) in all for \(feed.count) events, \(ids.count - Set(ids).count) sent again with their webhook-id"
                )
                second.kill(SIGTERM)
                #expect(await second.exitStatus() == 0)
            }
        }
        try await http.shutdown()
        try await simulator.shutdown()
    }

    /// The whole feed of an app, through the admin API.
    static func feed(of server: TillProcess, bundleId: String, http: HTTPClient) async throws -> [Event] {
        var events: [Event] = []
        var cursor = ""
        while true {
            var request = HTTPClientRequest(
                url: server.base + "/admin/v1/events?bundleId=\(bundleId)&limit=1000&after=\(cursor)"
            )
            request.headers.add(name: "Authorization", value: "Bearer \(World.operatorToken)")
            let response = try await http.execute(request, timeout: .seconds(30))
            let body = try await response.body.collect(upTo: 1 << 24)
            let page = try JSONDecoder().decode(Components.Schemas.EventPage.self, from: Data(body.readableBytesView))
            events += page.items
            cursor = page.nextCursor
            if !page.hasMore { return events }
        }
    }
}
