import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing
import TillCore
import TillFormats
import TillSimulatorContract
import TillTestSupport

@testable import TillSimulator

/// The simulator's device API (`/storekit/{environment}/…`) is what its OpenAPI document says
/// (Client/Sources/TillSimulatorContract/openapi.yaml), the document SimulatorStorefront's types are generated from:
/// every route is documented, and the simulator's real answers, for every operation, are judged against the document
/// by openapi-spec-validator and jsonschema (judge/device_api_judge.py), strictly: an answer may carry no field the
/// document does not name.
@Suite(.sharingTheMachine)
struct DeviceAPIContractTests {
    static let document = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Client/Sources/TillSimulatorContract/openapi.yaml")

    /// `METHOD /storekit/{environment}/path` for each operation of the document.
    static func documentedOperations() throws -> Set<String> {
        let text = try String(contentsOf: document, encoding: .utf8)
        var operations: Set<String> = []
        var inPaths = false
        var path: String?
        for line in text.split(separator: "\n") {
            if !line.hasPrefix(" ") { inPaths = line == "paths:" }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast())
            } else if let path, line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":") {
                let method = line.trimmingCharacters(in: .whitespaces).dropLast()
                if ["get", "post", "put", "delete", "patch"].contains(method) {
                    operations.insert("\(method.uppercased()) /storekit/{environment}\(path)")
                }
            }
        }
        return operations
    }

    /// The simulator's states of a queue entry and of a restore are its own enums (the domain does not take the
    /// generated types), so they are held here to the document's: a value on one side only fails.
    @Test func theQueuesStatesAreTheDocumentsStates() {
        #expect(
            QueueTransaction.State.allCases.map(\.rawValue).sorted()
                == Components.Schemas.TransactionState.allCases.map(\.rawValue).sorted()
        )
        #expect(
            RestoreResult.Status.allCases.map(\.rawValue).sorted()
                == Components.Schemas.RestoreResult.StatusPayload.allCases.map(\.rawValue).sorted()
        )
    }

    @Test func everyStoreKitRouteIsDocumentedAndEveryOperationRouted() async throws {
        let fixture = try await SimulatorFixture.make()
        defer { Task { try? await fixture.simulator.shutdown() } }
        let routed = Set(
            buildSimulatorRouter(fixture.simulator).routes.map { "\($0.method) \($0.path)" }
                .filter { $0.contains(" /storekit/{environment}/") }
        )
        let documented = try Self.documentedOperations()
        #expect(routed.count >= 14, "the router listed only \(routed.sorted())")
        #expect(routed.subtracting(documented).isEmpty, "routed, not documented: \(routed.subtracting(documented))")
        #expect(documented.subtracting(routed).isEmpty, "documented, not routed: \(documented.subtracting(routed))")
    }

    @Test(
        .enabled(
            if: Prerequisite.openAPIValidator.shouldRun,
            Comment(rawValue: Prerequisite.openAPIValidator.skipMessage)
        )
    )
    func theSimulatorsAnswersAreWhatTheDocumentSays() async throws {
        try Prerequisite.openAPIValidator.require()
        let fixture = try await SimulatorFixture.make()
        let exchanges = try await Self.exchanges(fixture)
        try await fixture.simulator.shutdown()
        let (status, summary) = try await PythonJudge.run(
            "device_api_judge.py",
            spec: ["document": Self.document.path, "exchanges": exchanges]
        )
        #expect((summary["errors"] as? [String]) == [], "\(summary["errors"] ?? "")")
        #expect((summary["unexercised"] as? [String]) == [], "\(summary["unexercised"] ?? "")")
        #expect((summary["checked"] as? Int ?? 0) >= 30, "\(summary)")
        #expect(status == 0)
    }

    /// Drives every operation of the device API (and the refusals the document lists) on a fresh simulator, and
    /// records each answer with the documented path it was made to.
    static func exchanges(_ fixture: SimulatorFixture) async throws -> [[String: Any]] {
        let simulator = fixture.simulator
        let bundle = SimulatorFixture.bundleId
        let phone = fixture.phone.id
        let tablet = fixture.tablet.id
        _ = try await simulator.offers.createOffer(
            appAppleId: fixture.app.appAppleId,
            productId: "premium.monthly",
            OfferInput(kind: .introductory, discountType: .freeTrial, duration: "P1W")
        )
        _ = try await simulator.offers.createOffer(
            appAppleId: fixture.app.appAppleId,
            productId: "premium.monthly",
            OfferInput(
                kind: .promotional,
                offerIdentifier: "loyal",
                discountType: .payUpFront,
                duration: "P3M",
                price: 1990
            )
        )
        _ = try await simulator.offers.createOffer(
            appAppleId: fixture.app.appAppleId,
            productId: "premium.yearly",
            OfferInput(
                kind: .offerCode,
                offerIdentifier: "listen",
                discountType: .freeTrial,
                duration: "P1M",
                customCode: "LISTEN"
            )
        )
        let gone = try await simulator.appStoreConnect.createAccount(AccountInput(environment: "Sandbox"))
        let goneDevice = try await simulator.appStoreConnect.createDevice(accountId: gone.id, DeviceInput(name: "old"))
        try await simulator.appStoreConnect.deleteAccount(id: gone.id)

        let recorded = Mutex<[(method: String, path: String, status: Int, body: [UInt8])]>([])
        let app = Application(router: buildSimulatorRouter(simulator))
        try await app.test(.router) { client in
            /// Calls `path` (the documented template filled in) and records the answer under `template`.
            func call(_ method: HTTPRequest.Method, _ template: String, _ path: String, _ body: String? = nil)
                async throws -> HTTPReply
            {
                let reply = try await client.call(method, "/storekit/sandbox" + path, json: body)
                recorded.withLock { $0.append(("\(method)", template, reply.status, reply.body)) }
                return reply
            }
            let device = "/devices/\(phone)"
            _ = try await call(.get, "/devices/{device}/can-make-payments", device + "/can-make-payments")
            _ = try await call(.get, "/devices/{device}/can-make-payments", "/devices/nope/can-make-payments")
            _ = try await call(
                .get,
                "/devices/{device}/can-make-payments",
                "/devices/\(goneDevice.id)/can-make-payments"
            )
            let ids = ["gems.100", "pro", "issue.1", "newsletter", "premium.monthly", "premium.yearly", "nope"]
            let products = try await call(
                .post,
                "/products",
                "/products",
                #"{"bundleId":"\#(bundle)","deviceId":"\#(phone)","productIdentifiers":\#(json(ids))}"#
            )
            #expect(products.status == 200)
            let many = (0..<201).map { "p\($0)" }
            _ = try await call(
                .post,
                "/products",
                "/products",
                #"{"bundleId":"\#(bundle)","productIdentifiers":\#(json(many))}"#
            )
            _ = try await call(
                .post,
                "/products",
                "/products",
                #"{"bundleId":"com.example.unknown","productIdentifiers":["x"]}"#
            )
            func pay(_ product: String, _ extra: String = "") async throws -> HTTPReply {
                try await call(
                    .post,
                    "/payments",
                    "/payments",
                    #"{"deviceId":"\#(phone)","bundleId":"\#(bundle)","productId":"\#(product)"\#(extra)}"#
                )
            }
            _ = try await pay("gems.100", #","quantity":2,"appAccountToken":"7e3fb20b-4cdb-47cc-936d-99d65f608138""#)
            _ = try await pay("pro", #","userAction":"cancel""#)
            _ = try await pay("pro", #","userAction":"maybe""#)
            let subscribed = try await pay("premium.monthly")
            let original = try #require(subscribed.object["originalTransactionId"] as? String)
            // A price increase that needs the customer's consent, answered on the consent sheet.
            _ = try await simulator.subscriptions.increasePrice(
                appAppleId: fixture.app.appAppleId,
                productId: "premium.monthly",
                PriceIncreaseInput(price: 1990, requiresConsent: true)
            )
            _ = try await call(
                .post,
                "/devices/{device}/subscriptions/{original}/price-consent",
                "/devices/\(phone)/subscriptions/\(original)/price-consent",
                #"{"accept":true}"#
            )
            _ = try await simulator.appStoreConnect.updateAccount(id: fixture.account.id, AccountInput(askToBuy: true))
            let deferred = try await pay("issue.1")
            _ = try await simulator.appStoreConnect.updateAccount(id: fixture.account.id, AccountInput(askToBuy: false))
            simulator.faults.add(try FaultRule(parsing: "sandbox:storeKit:outage=503,times=1"))
            _ = try await pay("pro")

            _ = try await call(
                .post,
                "/devices/{device}/offer-codes/redeem",
                device + "/offer-codes/redeem",
                #"{"bundleId":"\#(bundle)","code":"LISTEN"}"#
            )
            _ = try await call(
                .post,
                "/devices/{device}/offer-codes/redeem",
                device + "/offer-codes/redeem",
                #"{"bundleId":"\#(bundle)","code":"LISTEN"}"#
            )
            _ = try await call(
                .post,
                "/devices/{device}/offer-codes/redeem",
                device + "/offer-codes/redeem",
                #"{"bundleId":"\#(bundle)","code":"NOPE"}"#
            )

            let queue = try await call(.get, "/devices/{device}/queue", device + "/queue?bundleId=\(bundle)")
            _ = try await call(.get, "/devices/{device}/queue", device + "/queue")
            for entry in queue.array {
                guard let id = entry["id"] as? String, entry["state"] as? String != "deferred" else { continue }
                _ = try await call(.post, "/devices/{device}/queue/{entry}/finish", device + "/queue/\(id)/finish")
            }
            if let entry = deferred.object["id"] as? String {
                _ = try await call(.post, "/devices/{device}/queue/{entry}/finish", device + "/queue/\(entry)/finish")
            }
            _ = try await call(.post, "/devices/{device}/queue/{entry}/finish", device + "/queue/nope/finish")

            _ = try await call(
                .post,
                "/devices/{device}/restore",
                "/devices/\(tablet)/restore",
                #"{"bundleId":"\#(bundle)"}"#
            )
            _ = try await call(.post, "/devices/{device}/restore", "/devices/\(tablet)/restore", "[]")
            for (operation, suffix) in [
                ("receipt", "receipt"), ("app-transaction", "app-transaction"), ("transactions", "transactions"),
            ] {
                _ = try await call(.get, "/devices/{device}/\(operation)", device + "/\(suffix)?bundleId=\(bundle)")
            }
            _ = try await call(.get, "/devices/{device}/receipt", device + "/receipt")
            let subscription = "/devices/{device}/subscriptions/{original}"
            let mine = device + "/subscriptions/\(original)"
            _ = try await call(.get, subscription + "/renewal-info", mine + "/renewal-info")
            _ = try await call(.get, subscription + "/renewal-info", device + "/subscriptions/nope/renewal-info")
            _ = try await call(.post, subscription + "/price-consent", mine + "/price-consent", #"{"accept":true}"#)

            _ = try await call(.post, subscription + "/auto-renew", mine + "/auto-renew", #"{"enabled":false}"#)
            _ = try await call(.post, subscription + "/auto-renew", mine + "/auto-renew", #"{"enabled":"no"}"#)
            _ = try await call(
                .post,
                subscription + "/retention-message",
                mine + "/retention-message",
                #"{"locale":"en-US"}"#
            )
        }
        return recorded.withLock { $0 }.map { exchange in
            let json: Any =
                exchange.body.isEmpty
                ? NSNull() : (try? JSONSerialization.jsonObject(with: Data(exchange.body))) ?? NSNull()
            return ["method": exchange.method, "path": exchange.path, "status": exchange.status, "body": json]
        }
    }

    static func json(_ strings: [String]) -> String {
        "[" + strings.map { "\"\($0)\"" }.joined(separator: ",") + "]"
    }
}
