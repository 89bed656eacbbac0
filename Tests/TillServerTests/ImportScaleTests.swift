import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SQLKit
import SwiftASN1
import Testing
import TillAppStore
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillSimulator
import TillStorage
import TillTestSupport

@testable import TillServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `till import` as an operator runs it, at an app's scale: App Store customers made in the simulator (each a
/// sandbox account with its purchases: subscriptions that renewed, consumables, some refunded, non-consumables), a
/// file naming each by a signed transaction, a transaction id or an app receipt, the real `till serve` killed
/// (SIGKILL) a third of the way and started again, the command run again to follow the import to its end, then once
/// more. Every customer ends with what the simulator holds for them, each transaction recorded once; the second
/// import changes nothing.
@Suite(.sharingTheMachine, .serialized, .timeLimit(.minutes(20)))
struct ImportScaleTests {
    /// 300 in `swift test` (CI's time: a run of 10,000 takes about five minutes an engine in a debug build);
    /// `TILL_TEST_IMPORT_CUSTOMERS=10000` runs the import the issue measures (docs/benchmarks.md).
    static let customers = ProcessInfo.processInfo.environment["TILL_TEST_IMPORT_CUSTOMERS"].flatMap(Int.init) ?? 300
    static let bundleId = "com.example.crash"

    /// What one customer of the file bought, and how the file names them.
    struct Customer {
        var id: String
        var row: String
        /// Each transaction the simulator holds for them (renewals included).
        var transactions: Int
        var gems: Int64
        var entitlement: String?
    }

    @Test(
        .enabled(if: Prerequisite.tillExecutable.shouldRun, Comment(rawValue: Prerequisite.tillExecutable.skipMessage)),
        arguments: TestDatabase.all
    )
    func everyCustomerImportedOnceThroughAKill(_ engine: TestDatabase) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "till-import-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let databaseURL = try await engine.freshURL(prefix: "till_import")
        let simulator = try await Simulator.open(SimulatorConfiguration(keys: .shared))
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let clock = ContinuousClock()
        try await withServices({ buildSimulatorApplication(simulator, port: 0, onServerRunning: $0) }) { port in
            let world = try await World.make(simulator: simulator, directory: directory, simulatorPort: port)
            let made = clock.now
            let (customers, file) = try await Self.customers(in: world)
            let setUp = clock.now - made
            let path = directory.appendingPathComponent("customers.csv").path
            try file.write(toFile: path, atomically: true, encoding: .utf8)
            // App receipts are signed by another authority than JWS: the server trusts its root and intermediate
            // too, beside the world's JWS root.
            let receiptRoots = directory.appendingPathComponent("receipt-roots.pem").path
            try
                (try simulator.signer.receiptAuthority.root.serializeAsPEM().pemString + "\n"
                + simulator.signer.receiptAuthority.intermediate.serializeAsPEM().pemString + "\n")
                .write(toFile: receiptRoots, atomically: true, encoding: .utf8)
            let settings = [
                "TILL_APPLE_SANDBOX_ROOTS": world.rootsFile + "," + receiptRoots,
                "TILL_CATCH_UP_INTERVAL_SECONDS": "0",
                "TILL_IMPORT_REQUESTS_PER_SECOND": "5000",
                "TILL_IMPORT_SANDBOX_REQUESTS_PER_SECOND": "5000",
            ]

            // 1. The import starts; the server is killed a third of the way, with the command following it.
            var server = try await TillProcess.start(world, databaseURL: databaseURL, environment: settings)
            try await Self.register(world, on: server, http: http)
            let started = clock.now
            let first = try await Self.importing(path, on: server)
            // The command's progress (a line at each tenth, standard error not being a terminal) says when the
            // server is a third of the way: the command is a process of its own, and the simulator, in this one,
            // keeps this process's threads busy.
            var done = 0
            do {
                try await waitUntil(timeout: .seconds(900)) {
                    let output = first.output
                    guard let match = output.matches(of: #/\] (\d+)/\d+ (\d+)%/#).last, let percent = Int(match.2),
                        percent >= 30
                    else { return false }
                    done = Int(match.1) ?? 0
                    return true
                }
            } catch {
                Issue.record("the import did not get a third of the way:\n\(server.output)\n\(first.output)")
                throw error
            }
            server.kill(SIGKILL)
            #expect(await server.exitStatus() == SIGKILL)
            first.kill(SIGTERM)
            _ = await first.exitStatus()

            // 2. Started again, the server resumes the import; the same command attaches to it and follows it.
            server = try await TillProcess.start(world, databaseURL: databaseURL, environment: settings)
            let resumed = try await Self.importing(path, on: server)
            #expect(await resumed.exitStatus() == 0, "\(resumed.output)")
            #expect(resumed.output.contains("was under way with this file"), "\(resumed.output)")
            let took = clock.now - started
            let view = try #require(try await Self.latest(world, on: server, http: http))
            let expectedTransactions = customers.reduce(0) { $0 + $1.transactions }
            #expect(view.state == .finished && view.rows.total == Self.customers + 40)
            #expect(view.rows.imported == Self.customers && view.rows.failed == 0 && view.rows.pending == 0)
            #expect(view.rows.refused == 40)
            #expect(
                Dictionary(uniqueKeysWithValues: view.refusedBy.map { ($0.reason, $0.count) }) == [
                    .notFound: 20, .ownedByAnotherCustomer: 20,
                ]
            )
            #expect(view.transactions.recorded == expectedTransactions, "\(view.transactions)")

            // 3. Once more: a new import, every row already known.
            let again = clock.now
            let second = try await Self.importing(path, on: server)
            #expect(await second.exitStatus() == 0, "\(second.output)")
            let tookAgain = clock.now - again
            let secondView = try #require(try await Self.latest(world, on: server, http: http))
            #expect(secondView.id != view.id)
            #expect(secondView.rows.alreadyKnown == Self.customers && secondView.rows.imported == 0)
            #expect(secondView.transactions.recorded == 0 && secondView.transactions.updated == 0)

            // A customer as the app reads them.
            for customer in customers.prefix(10) {
                let read = try await world.customer(
                    customer.id,
                    on: server,
                    app: try await Self.appKey(world, server, http),
                    http: http
                )
                #expect(read.entitlements.map(\.id) == (customer.entitlement.map { [$0] } ?? []), "\(customer.id)")
                #expect((read.balances["gems"] ?? 0) == customer.gems, "\(customer.id)")
            }
            #expect(await server.stop() == 0)
            print(
                "import of \(Self.customers) customers (\(engine)): made in the simulator in \(setUp), "
                    + "imported in \(took) through a SIGKILL at \(done) rows, again in \(tookAgain)"
            )

            // 4. The books: each customer's transactions, balance and access, each transaction once.
            let database = try await TillDatabase.open(try DatabaseConfiguration(parsing: databaseURL))
            let db = database.sql
            func number(_ query: SQLQueryString) async throws -> Int {
                try await db.raw(query).first()?.decode(column: "n", as: Int.self) ?? -1
            }
            #expect(try await number("SELECT COUNT(*) AS n FROM srv_transactions") == expectedTransactions)
            #expect(
                try await number("SELECT COUNT(DISTINCT transaction_id) AS n FROM srv_transactions")
                    == expectedTransactions
            )
            #expect(try await number("SELECT COUNT(*) AS n FROM srv_transactions WHERE NOT confirmed") == 0)
            var transactions: [String: Int] = [:]
            for row in try await db.raw(
                "SELECT customer_id, COUNT(*) AS n FROM srv_transactions GROUP BY customer_id"
            ).all() {
                transactions[try row.decode(column: "customer_id", as: String.self)] = try row.decode(
                    column: "n",
                    as: Int.self
                )
            }
            var balances: [String: Int64] = [:]
            for row in try await db.raw("SELECT customer_id, balance FROM srv_balances WHERE credit = 'gems'").all() {
                balances[try row.decode(column: "customer_id", as: String.self)] = try row.decode(
                    column: "balance",
                    as: Int64.self
                )
            }
            var access: [String: String] = [:]
            for row in try await db.raw(
                "SELECT DISTINCT customer_id, product_id FROM srv_transactions WHERE product_type <> 'consumable' AND revocation_date IS NULL"
            ).all() {
                access[try row.decode(column: "customer_id", as: String.self)] = try row.decode(
                    column: "product_id",
                    as: String.self
                )
            }
            var wrong: [String] = []
            for customer in customers {
                let product = customer.entitlement.map { $0 == "pro" ? "pro" : "premium.monthly" }
                if transactions[customer.id] != customer.transactions
                    || balances[customer.id, default: 0] != customer.gems
                    || access[customer.id] != product
                {
                    wrong.append(customer.id)
                }
            }
            #expect(wrong.isEmpty, "\(wrong.count) customers differ from the simulator, first \(wrong.prefix(5))")
            #expect(
                try await number("SELECT COUNT(*) AS n FROM srv_events WHERE source = 'import'")
                    == (try await number("SELECT COUNT(*) AS n FROM srv_events"))
            )
            try await database.shutdown()
        }
        try await http.shutdown()
        try await simulator.shutdown()
    }

    /// `customers` sandbox accounts of the simulator and their purchases, and the file of them: 40% subscribers (one
    /// renewal each, a month later), 30% with gems (one or two purchases, one in seven of them refunded), 30% with
    /// the non-consumable; named by a signed transaction (6 in 10), a transaction id (3 in 10: production asked
    /// first) or an app receipt (1 in 10). Then 20 ids no environment knows, and 20 rows naming another customer's
    /// purchase.
    static func customers(in world: World) async throws -> ([Customer], String) {
        let simulator = world.simulator
        let appAppleId = world.simulatorApp.appAppleId
        for product in [
            ProductInput(productId: "pro", type: .nonConsumable, price: 4990),
            ProductInput(
                productId: "premium.monthly",
                type: .autoRenewable,
                subscriptionGroup: "premium",
                subscriptionPeriod: .oneMonth,
                price: 990
            ),
        ] {
            _ = try await simulator.appStoreConnect.createProduct(appAppleId: appAppleId, product)
        }
        // Months of real length: the clock moved once below renews each subscription once, and nothing renews while
        // the test runs.
        try await simulator.subscriptions.setRenewalRate(.realTime)
        var customers: [Customer] = []
        var rows: [String] = []
        var refunds: [String] = []
        var subscribers: [Int] = []
        for index in 0..<Self.customers {
            let account = try await simulator.appStoreConnect.createAccount(AccountInput(environment: "Sandbox"))
            let device = try await simulator.appStoreConnect.createDevice(accountId: account.id, DeviceInput())
            let products: [String]
            switch index % 10 {
            case 0..<4: products = ["premium.monthly"]
            case 4..<7: products = index % 2 == 0 ? ["gems.100"] : ["gems.100", "gems.100"]
            default: products = ["pro"]
            }
            var bought: [QueueTransaction] = []
            for product in products {
                bought.append(
                    try await simulator.payments.addPayment(
                        PaymentRequest(deviceId: device.id, bundleId: Self.bundleId, productId: product),
                        environment: .sandbox
                    )
                )
            }
            var gems = Int64(products.filter { $0 == "gems.100" }.count * 100)
            if products.first == "gems.100", index % 7 == 0 {
                refunds.append(try #require(bought[0].transactionId))
                gems -= 100
            }
            if products.first == "premium.monthly" { subscribers.append(customers.count) }
            let id = "customer-\(index)"
            let input: String
            switch index % 10 {
            case 0..<6: input = ",,\(try #require(bought[0].signedTransaction))"
            case 6..<9: input = "\(try #require(bought[0].transactionId)),,"
            default:
                input =
                    ",\(Base64.encode(try await simulator.payments.appReceipt(deviceId: device.id, bundleId: Self.bundleId, environment: .sandbox))),"
            }
            rows.append("\(id),\(input)")
            customers.append(
                Customer(
                    id: id,
                    row: input,
                    transactions: products.count,
                    gems: gems,
                    entitlement: products.first == "premium.monthly" ? "premium" : products.first == "pro" ? "pro" : nil
                )
            )
        }
        for transaction in refunds {
            _ = try await simulator.subscriptions.refund(transactionId: transaction, reason: 0)
        }
        // A month and a day: each subscription renews once.
        _ = try await simulator.subscriptions.advanceClock(seconds: 32 * 86_400)
        for index in subscribers { customers[index].transactions += 1 }
        for index in 0..<20 { rows.append("stranger-\(index),\(4_000_000_000_000_000 + index),,") }
        for index in 0..<20 { rows.append("claimant-\(index),\(customers[index * 7].row)") }
        return (
            customers, "customerId,transactionId,appReceipt,signedTransaction\n" + rows.joined(separator: "\n") + "\n"
        )
    }

    /// Registers the app (its products on the server too) through the admin API.
    static func register(_ world: World, on server: TillProcess, http: HTTPClient) async throws {
        _ = try await world.register(on: server, http: http)
        for (product, body) in [
            ("pro", ["type": "nonConsumable", "entitlements": ["pro"]] as [String: Any]),
            (
                "premium.monthly",
                ["type": "autoRenewable", "entitlements": ["premium"], "subscriptionGroup": "premium"]
            ),
        ] {
            let answer = try await world.send(
                http,
                .PUT,
                server.base + "/admin/v1/apps/\(Self.bundleId)/products/\(product)",
                token: World.operatorToken,
                body
            )
            #expect(answer.0 == 201 || answer.0 == 200)
        }
    }

    static func appKey(_ world: World, _ server: TillProcess, _ http: HTTPClient) async throws -> String {
        let found = try await world.send(
            http,
            .GET,
            server.base + "/admin/v1/apps/\(Self.bundleId)",
            token: World.operatorToken
        )
        return try #require(found.1["appKey"] as? String)
    }

    /// `till import --app … FILE` against `server`, running.
    static func importing(_ path: String, on server: TillProcess) async throws -> TillProcess {
        try await TillProcess.start(
            ["import", "--app", Self.bundleId, "--url", server.base, path],
            environment: ["TILL_OPERATOR_TOKEN": World.operatorToken],
            base: server.base
        )
    }

    /// The app's newest import.
    static func latest(_ world: World, on server: TillProcess, http: HTTPClient) async throws -> ImportView? {
        var request = HTTPClientRequest(url: server.base + "/admin/v1/apps/\(Self.bundleId)/imports?limit=1")
        request.headers.add(name: "Authorization", value: "Bearer \(World.operatorToken)")
        let response = try await http.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return try JSONDecoder().decode(Components.Schemas.ImportPage.self, from: Data(body.readableBytesView)).items
            .first
    }
}
