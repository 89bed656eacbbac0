import Foundation
import Testing
import TillCore
import TillFormats
import TillTestSupport

@testable import TillSimulator

/// Apple's official App Store Server Library (Python, from PyPI) judges the simulator: it must accept the
/// simulator's JWS with the simulator's root trusted, and decode its App Store Server API responses.
/// `.ci/run` installs the library; elsewhere the test is skipped with a message, except under `CI`, where it fails.
@Suite(.sharingTheMachine)
struct PythonJudgeTests {
    @Test(.enabled(if: PythonJudge.enabled, PythonJudge.skipMessage), arguments: TestDatabase.all)
    func applesLibraryAcceptsTheSimulatorsSignedDataAndResponses(_ database: TestDatabase) async throws {
        try PythonJudge.requireLibrary()
        let fixture = try await SimulatorFixture.make(database: database)
        let pro = try await fixture.buy("pro")
        let subscription = try await fixture.buy("premium.monthly")
        _ = try await fixture.buy("gems.100")
        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
        _ = try await fixture.simulator.subscriptions.refund(transactionId: try #require(pro.transactionId), reason: 0)
        // Every notification type Apple added since 2023, so that Apple's verifier reads each one.
        let simulator = fixture.simulator
        let issue = try #require(try await fixture.buy("issue.1").transactionId)
        _ = try await simulator.subscriptions.refund(transactionId: issue, reason: 0, percentage: 25_000)
        _ = try await simulator.subscriptions.reverseRefund(transactionId: issue)
        let subscribed = try #require(subscription.transactionId)
        _ = try await simulator.subscriptions.extendRenewalDate(
            originalTransactionId: subscribed, app: fixture.app, environment: .sandbox, days: 3, reason: 1,
            requestIdentifier: "judge"
        )
        _ = try await simulator.subscriptions.increasePrice(
            appAppleId: fixture.app.appAppleId, productId: "premium.monthly", PriceIncreaseInput(price: 9990)
        )
        _ = try await simulator.subscriptions.respondToPriceIncrease(originalTransactionId: subscribed, accept: true)
        _ = try await simulator.events.rescindConsent(accountId: fixture.account.id, bundleId: SimulatorFixture.bundleId)
        _ = try await simulator.events.externalPurchaseToken(
            appAppleId: fixture.app.appAppleId, ExternalPurchaseTokenInput(subtype: "UNREPORTED")
        )
        for event in AdvancedCommerceEvent.allCases {
            _ = try await simulator.events.advancedCommerce(event, originalTransactionId: subscribed)
        }
        let credentials = try await fixture.simulator.appStoreConnect.createAPIKey(appAppleId: fixture.app.appAppleId)
        let original = try #require(subscription.transactionId)
        let renewal = try await fixture.simulator.payments.signedRenewalInfo(
            deviceId: fixture.phone.id,
            originalTransactionId: original,
            environment: .sandbox
        )
        let appTransaction = try await fixture.simulator.payments.signedAppTransaction(
            deviceId: fixture.phone.id,
            bundleId: SimulatorFixture.bundleId,
            environment: .sandbox
        )
        let notifications = try await fixture.simulator.notifications.notificationLog(
            appAppleId: fixture.app.appAppleId,
            environment: .sandbox
        ).map(\.signedPayload)
        let transactions = try await fixture.simulator.payments.signedTransactions(
            deviceId: fixture.phone.id,
            bundleId: SimulatorFixture.bundleId,
            environment: .sandbox
        )
        let order = try #require(
            try await fixture.simulator.store.purchases.transaction(id: original, on: fixture.simulator.store.sql)
        ).orderId

        try await withServices({ buildSimulatorApplication(fixture.simulator, port: 0, onServerRunning: $0) }) {
            port in
            let spec: [String: Any] = [
                "rootDER": Base64.encode(try derBytes(fixture.simulator.signer.jwsAuthority.root)),
                "environment": "Sandbox",
                "bundleId": SimulatorFixture.bundleId, "appAppleId": fixture.app.appAppleId,
                "transactions": transactions, "renewalInfos": [renewal], "notifications": notifications,
                "appTransactions": [appTransaction],
                "api": [
                    "baseURL": "http://127.0.0.1:\(port)/sandbox", "privateKey": credentials.privateKey,
                    "keyId": credentials.keyId,
                    "issuerId": credentials.issuerId, "transactionId": original, "originalTransactionId": original,
                    "orderId": order,
                    "nowMs": fixture.simulator.clock.nowMilliseconds,
                ],
            ]
            let (status, summary) = try await PythonJudge.run("app_store_server_library_judge.py", spec: spec)
            #expect(status == 0, "\(summary)")
            #expect((summary["transactions"] as? [Any])?.count == transactions.count)
            #expect((summary["notifications"] as? [Any])?.count == notifications.count)
            let types = Set(((summary["notifications"] as? [[String: Any]]) ?? []).compactMap { $0["notificationType"] as? String })
            #expect(types.isSuperset(of: [
                "REFUND_REVERSED", "RENEWAL_EXTENDED", "PRICE_INCREASE", "RESCIND_CONSENT", "EXTERNAL_PURCHASE_TOKEN",
                "METADATA_UPDATE", "MIGRATION", "PRICE_CHANGE",
            ]), "\(types)")
            let api = try #require(summary["api"] as? [String: Any])
            #expect(api["transactionInfo"] as? String == original)
            #expect((api["history"] as? [String: Any])?["count"] as? Int == transactions.count + 0)
            #expect(api["revokedTrue"] as? Int == 1 && api["revokedFalse"] as? Int == transactions.count - 1)
            #expect((api["order"] as? [String: Any])?["status"] as? Int == 0)
            #expect(api["refunds"] as? Int == 1)
            #expect(api["testNotificationType"] as? String == "TEST")
        }
    }
}
