import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import TillCore
import TillFormats
import TillStorage
import TillTestSupport

@testable import TillSimulator

/// The admin and StoreKit HTTP APIs, driven as a developer and an app would.
@Suite(.sharingTheMachine)
struct HTTPFlowTests {
    typealias Reply = HTTPReply

    func call(_ client: some TestClientProtocol, _ method: HTTPRequest.Method, _ path: String, _ body: String? = nil)
        async throws -> Reply
    {
        try await client.call(method, path, json: body)
    }

    @Test(arguments: TestDatabase.all)
    func aDeveloperSetsUpAnAppAndAnAppBuysRestoresAndReadsItsReceipt(_ engine: TestDatabase) async throws {
        let database = engine == .sqlite ? .sqliteInMemory : try await engine.fresh(prefix: "till_sim")
        let simulator = try await Simulator.open(SimulatorConfiguration(database: database, keys: .shared))
        let app = Application(router: buildSimulatorRouter(simulator))
        try await app.test(.router) { client in
            let bundle = "com.example.http.\(UUID().uuidString.prefix(8).lowercased())"
            let created = try await call(
                client,
                .post,
                "/admin/v1/apps",
                #"{"bundleId":"\#(bundle)","sharedSecret":"s3cret"}"#
            )
            #expect(created.status == 201)
            let appId = try #require(created.object["appAppleId"] as? Int)
            #expect(
                try await call(client, .post, "/admin/v1/apps", #"{"bundleId":"\#(bundle)"}"#).object["error"] != nil
            )
            #expect(
                try await call(
                    client,
                    .post,
                    "/admin/v1/apps/\(appId)/products",
                    #"{"productId":"coins","type":"consumable","price":1990,"title":"Coins"}"#
                ).status == 201
            )
            #expect(
                try await call(
                    client,
                    .post,
                    "/admin/v1/apps/\(appId)/products",
                    #"{"productId":"lifetime","type":"nonConsumable","reviewState":"Waiting for Review"}"#
                ).status == 201
            )
            let bad = try await call(
                client,
                .post,
                "/admin/v1/apps/\(appId)/products",
                #"{"productId":"sub","type":"autoRenewable"}"#
            )
            #expect(
                bad.status == 400
                    && (bad.object["error"] as? [String: Any])?["code"] as? String == "subscriptionNeedsGroup"
            )

            let account = try await call(
                client,
                .post,
                "/admin/v1/accounts",
                #"{"environment":"Sandbox","storefront":"USA"}"#
            )
            let accountId = try #require(account.object["id"] as? String)
            let device = try await call(client, .post, "/admin/v1/accounts/\(accountId)/devices", #"{"name":"iPhone"}"#)
            let deviceId = try #require(device.object["id"] as? String)
            let tablet = try #require(
                try await call(client, .post, "/admin/v1/accounts/\(accountId)/devices", "{}").object["id"] as? String
            )

            #expect(
                try await call(client, .get, "/storekit/sandbox/devices/\(deviceId)/can-make-payments").object[
                    "canMakePayments"
                ] as? Bool == true
            )
            let lookup = try await call(
                client,
                .post,
                "/storekit/sandbox/products",
                #"{"bundleId":"\#(bundle)","deviceId":"\#(deviceId)","productIdentifiers":["coins","lifetime","nope"]}"#
            )
            #expect((lookup.object["products"] as? [[String: Any]])?.first?["displayPrice"] as? String == "$1.99")
            // Waiting for Review is sold in the sandbox, not in production.
            #expect(lookup.object["invalidProductIdentifiers"] as? [String] == ["nope"])

            let purchase = try await call(
                client,
                .post,
                "/storekit/sandbox/payments",
                #"{"deviceId":"\#(deviceId)","bundleId":"\#(bundle)","productId":"lifetime"}"#
            )
            #expect(
                purchase.object["state"] as? String == "purchased" && purchase.object["signedTransaction"] is String
            )
            let queue = try await call(client, .get, "/storekit/sandbox/devices/\(deviceId)/queue?bundleId=\(bundle)")
            #expect(queue.array.count == 1)
            let entry = try #require(queue.array.first?["id"] as? String)
            #expect(
                try await call(client, .post, "/storekit/sandbox/devices/\(deviceId)/queue/\(entry)/finish").status
                    == 204
            )
            #expect(
                try await call(client, .get, "/storekit/sandbox/devices/\(deviceId)/queue?bundleId=\(bundle)").array
                    .isEmpty
            )

            let receipt = try #require(
                try await call(client, .get, "/storekit/sandbox/devices/\(deviceId)/receipt?bundleId=\(bundle)").object[
                    "receiptData"
                ] as? String
            )
            let verifier = ReceiptVerifier(
                .init(anchors: simulator.signer.receiptAuthority.anchors, bundleId: bundle, environment: .sandbox)
            )
            #expect(
                await verifier.verify(base64: receipt).value?.receipt.inAppPurchases.map(\.productId) == ["lifetime"]
            )

            let restore = try await call(
                client,
                .post,
                "/storekit/sandbox/devices/\(tablet)/restore",
                #"{"bundleId":"\#(bundle)"}"#
            )
            #expect(
                restore.object["status"] as? String == "completed"
                    && (restore.object["transactions"] as? [Any])?.count == 1
            )

            let appTransaction = try #require(
                try await call(client, .get, "/storekit/sandbox/devices/\(deviceId)/app-transaction?bundleId=\(bundle)")
                    .object["signedAppTransaction"] as? String
            )
            let jws = SignedDataVerifier(
                .init(anchors: simulator.signer.jwsAuthority.anchors, bundleId: bundle, environment: .sandbox)
            )
            #expect(await jws.verify(appTransaction, as: AppTransaction.self).value?.payload.bundleId == bundle)
            #expect(
                (try await call(client, .get, "/storekit/sandbox/devices/\(deviceId)/transactions?bundleId=\(bundle)")
                    .object["signedTransactions"] as? [String])?.count == 1
            )

            // Production does not sell a product waiting for review, and sandbox devices are not production ones.
            #expect(
                try await call(
                    client,
                    .post,
                    "/storekit/production/payments",
                    #"{"deviceId":"\#(deviceId)","bundleId":"\#(bundle)","productId":"lifetime"}"#
                ).status == 400
            )
            #expect(
                try await call(client, .get, "/storekit/staging/devices/\(deviceId)/queue?bundleId=\(bundle)").status
                    == 404
            )
        }
        try await simulator.shutdown()
    }

    @Test func theClockFaultsAndCertificatesAreManagedThroughTheAdminAPI() async throws {
        let simulator = try await Simulator.open(SimulatorConfiguration(keys: .shared))
        let app = Application(router: buildSimulatorRouter(simulator))
        try await app.test(.router) { client in
            let before = try await call(client, .get, "/admin/v1/clock")
            #expect(before.object["renewalRate"] as? String == "monthly-every-5-minutes")
            let after = try await call(client, .post, "/admin/v1/clock/advance", #"{"seconds":3600}"#)
            #expect(after.object["offsetSeconds"] as? Double == 3600)
            #expect(try await call(client, .post, "/admin/v1/clock/advance", #"{"seconds":-1}"#).status == 400)
            #expect(
                try await call(client, .put, "/admin/v1/clock/rate", #"{"rate":"monthly-every-minute"}"#).object[
                    "monthSeconds"
                ] as? Double == 60
            )
            #expect(try await call(client, .put, "/admin/v1/clock/rate", #"{"rate":"whenever"}"#).status == 400)

            let fault = try await call(
                client,
                .post,
                "/admin/v1/faults",
                #"{"spec":"sandbox:verifyReceipt:latency=3-6"}"#
            )
            #expect(
                fault.status == 201 && fault.object["latencyMinimum"] as? Double == 3
                    && fault.object["latencyMaximum"] as? Double == 6
            )
            #expect(
                try await call(client, .post, "/admin/v1/faults", #"{"spec":"mars:verifyReceipt:latency=1"}"#).status
                    == 400
            )
            #expect(try await call(client, .get, "/admin/v1/faults").array.count == 1)
            #expect(
                try await call(client, .delete, "/admin/v1/faults/\(try #require(fault.object["id"] as? String))")
                    .status == 204
            )
            #expect(try await call(client, .get, "/admin/v1/faults").array.isEmpty)

            try await client.execute(uri: "/admin/v1/certificates/jws-root.pem", method: .get) { response in
                #expect(String(buffer: response.body).hasPrefix("-----BEGIN CERTIFICATE-----"))
            }
            try await client.execute(uri: "/admin/v1/certificates/receipt-root.der", method: .get) { response in
                #expect(response.body.readableBytes > 500 && response.body.getInteger(at: 0, as: UInt8.self) == 0x30)
            }
        }
        try await simulator.shutdown()
    }

    @Test func theAdminTokenIsRequiredWhenConfigured() async throws {
        let simulator = try await Simulator.open(SimulatorConfiguration(adminToken: "t0ken", keys: .shared))
        let app = Application(router: buildSimulatorRouter(simulator))
        try await app.test(.router) { client in
            #expect(try await call(client, .get, "/admin/v1/apps").status == 401)
            try await client.execute(uri: "/admin/v1/apps", method: .get, headers: [.authorization: "Bearer t0ken"]) {
                response in
                #expect(response.status == .ok)
            }
        }
        try await simulator.shutdown()
    }

    /// The simulator's own API answers a route it does not have, or a method a path does not take, with the same
    /// JSON errors as the server (TillHTTPKit), not Hummingbird's bare 404.
    @Test func unknownRoutesAndMethodsAreJSONErrors() async throws {
        let simulator = try await Simulator.open(SimulatorConfiguration(keys: .shared))
        let app = Application(router: buildSimulatorRouter(simulator))
        try await app.test(.router) { client in
            let unknown = try await call(client, .get, "/admin/v1/nothing")
            #expect(unknown.status == 404 && unknown.code == "notFound")
            let wrongMethod = try await client.call(.delete, "/health")
            #expect(wrongMethod.status == 405 && wrongMethod.code == "methodNotAllowed")
            #expect(wrongMethod.headers[.allow]?.contains("GET") == true)
        }
        try await simulator.shutdown()
    }
}
