import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import TillCore
import TillFormats
import TillTestSupport

@testable import TillSimulator

/// Apple's verifyReceipt contract, one test per status code (apple-formats.md §3).
@Suite(.sharingTheMachine)
struct VerifyReceiptTests {
    func post(_ client: some TestClientProtocol, _ path: String, _ body: String, method: HTTPRequest.Method = .post)
        async throws -> [String: Any]
    {
        try await client.execute(uri: path, method: method, body: ByteBuffer(string: body)) { response in
            #expect(response.status == .ok)
            return try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as! [String: Any]
        }
    }

    func request(_ receipt: [UInt8], password: String? = nil, excludeOld: Bool? = nil) -> String {
        var object: [String: Any] = ["receipt-data": Base64.encode(receipt)]
        if let password { object["password"] = password }
        if let excludeOld { object["exclude-old-transactions"] = excludeOld }
        return String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    func status(_ json: [String: Any]) -> Int? { json["status"] as? Int }

    @Test(arguments: TestDatabase.all) func statusCodesOfAppReceipts(_ database: TestDatabase) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        _ = try await fixture.buy("pro")
        _ = try await fixture.buy("premium.monthly")
        let receipt = try await fixture.simulator.payments.appReceipt(
            deviceId: fixture.phone.id,
            bundleId: SimulatorFixture.bundleId,
            environment: .sandbox
        )
        let app = Application(router: buildSimulatorRouter(fixture.simulator))
        try await app.test(.router) { client in
            // 21000: not a POST, or unreadable JSON.
            #expect(status(try await post(client, "/sandbox/verifyReceipt", "{}", method: .get)) == 21000)
            #expect(status(try await post(client, "/sandbox/verifyReceipt", "not json")) == 21000)
            // 21002: malformed receipt data.
            #expect(status(try await post(client, "/sandbox/verifyReceipt", #"{"receipt-data":"%%%"}"#)) == 21002)
            #expect(status(try await post(client, "/sandbox/verifyReceipt", #"{}"#)) == 21002)
            #expect(
                status(try await post(client, "/sandbox/verifyReceipt", request([0x30, 0x03, 0x02, 0x01, 0x00])))
                    == 21002
            )
            // 21003: a receipt this App Store did not sign.
            let decodedReceipt = try ReceiptVerifier.decodeWithoutVerifying(der: receipt)
            let forged = try ReceiptFixturesForSimulator.foreignSigner().sign(decodedReceipt)
            #expect(
                status(try await post(client, "/sandbox/verifyReceipt", request(forged, password: "secret-1"))) == 21003
            )
            // 21007: a sandbox receipt sent to production.
            #expect(
                status(try await post(client, "/production/verifyReceipt", request(receipt, password: "secret-1")))
                    == 21007
            )
            // 21004: receipts with auto-renewables need the shared secret.
            #expect(
                status(try await post(client, "/sandbox/verifyReceipt", request(receipt, password: "wrong"))) == 21004
            )
            #expect(status(try await post(client, "/sandbox/verifyReceipt", request(receipt))) == 21004)

            let valid = try await post(client, "/sandbox/verifyReceipt", request(receipt, password: "secret-1"))
            #expect(status(valid) == 0 && valid["environment"] as? String == "Sandbox")
            let decoded = try #require(valid["receipt"] as? [String: Any])
            #expect(
                decoded["bundle_id"] as? String == SimulatorFixture.bundleId
                    && decoded["receipt_type"] as? String == "ProductionSandbox"
            )
            #expect((decoded["in_app"] as? [Any])?.count == 2)
            #expect(valid["latest_receipt"] is String)
            let latest = try #require(valid["latest_receipt_info"] as? [[String: Any]])
            #expect(
                latest.count == 2
                    && latest.allSatisfy { $0["purchase_date_ms"] is String && $0["purchase_date_pst"] is String }
            )
            let pending = try #require(valid["pending_renewal_info"] as? [[String: Any]])
            #expect(
                pending.first?["auto_renew_status"] as? String == "1"
                    && pending.first?["product_id"] as? String == "premium.monthly"
            )

            // A rotated shared secret: the old one now fails with 21004.
            _ = try await fixture.simulator.appStoreConnect.rotateSharedSecret(appAppleId: fixture.app.appAppleId)
            #expect(
                status(try await post(client, "/sandbox/verifyReceipt", request(receipt, password: "secret-1")))
                    == 21004
            )

            // 21010: the account was deleted.
            try await fixture.simulator.appStoreConnect.deleteAccount(id: fixture.account.id)
            let rotated = try await fixture.simulator.appStoreConnect.app(appAppleId: fixture.app.appAppleId)
                .sharedSecret
            #expect(
                status(try await post(client, "/sandbox/verifyReceipt", request(receipt, password: rotated))) == 21010
            )
        }
    }

    @Test(arguments: TestDatabase.all) func productionReceiptsGoToProductionAndExcludeOldTransactions(
        _ database: TestDatabase
    ) async throws {
        let fixture = try await SimulatorFixture.make(database: database, environment: .production)
        _ = try await fixture.buy("premium.monthly")
        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 86_400 * 65)  // two real months: two renewals
        let receipt = try await fixture.simulator.payments.appReceipt(
            deviceId: fixture.phone.id,
            bundleId: SimulatorFixture.bundleId,
            environment: .production
        )
        let app = Application(router: buildSimulatorRouter(fixture.simulator))
        try await app.test(.router) { client in
            #expect(
                status(try await post(client, "/sandbox/verifyReceipt", request(receipt, password: "secret-1")))
                    == 21008
            )
            let all = try await post(client, "/production/verifyReceipt", request(receipt, password: "secret-1"))
            #expect((all["latest_receipt_info"] as? [Any])?.count == 3)
            let latest = try await post(
                client,
                "/production/verifyReceipt",
                request(receipt, password: "secret-1", excludeOld: true)
            )
            #expect((latest["latest_receipt_info"] as? [Any])?.count == 1)
            #expect((latest["receipt"] as? [String: Any])?["app_item_id"] as? Int == Int(fixture.app.appAppleId))
        }
    }

    @Test(arguments: TestDatabase.all) func iOS6ReceiptsAndTheExpiredStatus(_ database: TestDatabase) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        let consumable = try await fixture.buy("gems.100")
        let subscription = try await fixture.buy("premium.monthly")
        let app = Application(router: buildSimulatorRouter(fixture.simulator))
        try await app.test(.router) { client in
            func body(_ receipt: String?, password: String? = "secret-1") -> String {
                var object: [String: Any] = ["receipt-data": receipt ?? ""]
                if let password { object["password"] = password }
                return String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
            }
            let valid = try await post(client, "/sandbox/verifyReceipt", body(consumable.transactionReceipt))
            #expect(status(valid) == 0)
            #expect((valid["receipt"] as? [String: Any])?["transaction_id"] as? String == consumable.transactionId)
            #expect(
                status(try await post(client, "/production/verifyReceipt", body(consumable.transactionReceipt)))
                    == 21007
            )

            let active = try await post(client, "/sandbox/verifyReceipt", body(subscription.transactionReceipt))
            #expect(
                status(active) == 0 && active["latest_receipt_info"] is [String: Any]
                    && active["auto_renew_status"] as? Int == 1
            )
            #expect(
                status(
                    try await post(
                        client,
                        "/sandbox/verifyReceipt",
                        body(subscription.transactionReceipt, password: "bad")
                    )
                ) == 21004
            )

            let original = try #require(subscription.transactionId)
            _ = try await fixture.simulator.subscriptions.setAutoRenew(originalTransactionId: original, enabled: false)
            _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
            let expired = try await post(client, "/sandbox/verifyReceipt", body(subscription.transactionReceipt))
            #expect(status(expired) == 21006)
            #expect(expired["receipt"] is [String: Any] && expired["latest_expired_receipt_info"] is [String: Any])
        }
    }

    @Test(arguments: TestDatabase.all) func faultsAnswerWithRetryableStatuses(_ database: TestDatabase) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        let app = Application(router: buildSimulatorRouter(fixture.simulator))
        try await app.test(.router) { client in
            fixture.simulator.faults.add(try FaultRule(parsing: "sandbox:verifyReceipt:status=21005,times=1"))
            #expect(status(try await post(client, "/sandbox/verifyReceipt", "{}")) == 21005)
            fixture.simulator.faults.add(try FaultRule(parsing: "sandbox:verifyReceipt:status=21150+retryable,times=1"))
            let retryable = try await post(client, "/sandbox/verifyReceipt", "{}")
            #expect(status(retryable) == 21150 && retryable["is-retryable"] as? Bool == true)
            fixture.simulator.faults.add(try FaultRule(parsing: "sandbox:verifyReceipt:status=21199,times=1"))
            #expect(try await post(client, "/sandbox/verifyReceipt", "{}")["is-retryable"] as? Bool == false)
            // Production is untouched by a sandbox fault, and the fault is spent.
            fixture.simulator.faults.add(try FaultRule(parsing: "sandbox:verifyReceipt:outage=503,times=1"))
            #expect(status(try await post(client, "/production/verifyReceipt", "{}")) == 21002)
            try await client.execute(uri: "/sandbox/verifyReceipt", method: .post, body: ByteBuffer(string: "{}")) {
                response in
                #expect(response.status == .serviceUnavailable)
            }
            #expect(status(try await post(client, "/sandbox/verifyReceipt", "{}")) == 21002)
        }
    }
}

enum ReceiptFixturesForSimulator {
    static let foreign = try! TestPKI.makeAuthority(kind: .rsa2048, name: "Not Apple")

    static func foreignSigner() throws -> ReceiptSigner {
        try ReceiptSigner(key: foreign.leafKey.rsa!, certificates: foreign.chain)
    }
}
