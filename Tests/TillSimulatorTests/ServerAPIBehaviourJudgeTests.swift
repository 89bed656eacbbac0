import AsyncHTTPClient
import Foundation
import Testing
import TillCore
import TillFormats
import TillTestSupport

@testable import TillSimulator

/// Apple's official Python library calls the simulator's App Store Server API over HTTP and decodes what it
/// answers (judge/server_api_behaviour_judge.py); these tests check that what it saw is what Apple documents.
@Suite(.sharingTheMachine)
struct ServerAPIBehaviourJudgeTests {
    /// The part of a judge's spec every scenario needs: trust, app and API key.
    func spec(_ fixture: SimulatorFixture, port: Int, scenario: String) async throws -> [String: Any] {
        let credentials = try await fixture.simulator.appStoreConnect.createAPIKey(appAppleId: fixture.app.appAppleId)
        return [
            "scenario": scenario,
            "rootDER": Base64.encode(try derBytes(fixture.simulator.signer.jwsAuthority.root)),
            "environment": "Sandbox", "bundleId": SimulatorFixture.bundleId, "appAppleId": fixture.app.appAppleId,
            "api": [
                "baseURL": "http://127.0.0.1:\(port)/sandbox", "privateKey": credentials.privateKey,
                "keyId": credentials.keyId, "issuerId": credentials.issuerId,
            ],
            "adminURL": "http://127.0.0.1:\(port)/admin/v1",
            "nowMs": fixture.simulator.clock.nowMilliseconds,
        ]
    }

    func judge(_ fixture: SimulatorFixture, scenario: String, _ extra: [String: Any]) async throws -> [String: Any] {
        var summary: [String: Any] = [:]
        try await withServices({ buildSimulatorApplication(fixture.simulator, port: 0, onServerRunning: $0) }) {
            port in
            let spec = try await spec(fixture, port: port, scenario: scenario).merging(extra) { $1 }
            let (status, output) = try await PythonJudge.run("server_api_behaviour_judge.py", spec: spec)
            #expect(status == 0, "\(output)")
            summary = output
        }
        return summary
    }

    @Test(.enabled(if: PythonJudge.enabled, PythonJudge.skipMessage), arguments: TestDatabase.all)
    func historyRevisionsSurviveRefundsWhilePagingAndRevokedTakesPythonsBooleans(_ database: TestDatabase) async throws
    {
        try PythonJudge.requireLibrary()
        let fixture = try await SimulatorFixture.make(database: database)
        var ids: [String] = []
        for _ in 0..<27 { ids.append(try #require(try await fixture.buy("gems.100").transactionId)) }
        let summary = try await judge(
            fixture,
            scenario: "history",
            ["transactionIds": ids, "anyTransactionId": ids[0]]
        )

        for order in ["ascending", "descending"] {
            let pass = try #require(summary[order] as? [String: Any], "\(summary)")
            let items = try #require(pass["pages"] as? [[[String: Any]]]).flatMap { $0 }
            let seen = items.compactMap { $0["id"] as? String }
            // Nothing is skipped: every transaction comes at least once.
            #expect(Set(seen) == Set(ids), "\(order): \(seen)")
            // A transaction refunded after it was seen comes again, with its new data; one refunded before it
            // was reached comes once, already refunded. Every other one comes exactly once.
            let seenThenRefunded = try #require(pass["seenThenRefunded"] as? String)
            let unseenThenRefunded = try #require(pass["unseenThenRefunded"] as? String)
            let again = items.filter { $0["id"] as? String == seenThenRefunded }
            #expect(again.count == 2 && again.last?["revoked"] as? Bool == true, "\(order): \(again)")
            let once = items.filter { $0["id"] as? String == unseenThenRefunded }
            #expect(once.count == 1 && once.first?["revoked"] as? Bool == true, "\(order): \(once)")
            #expect(seen.count == ids.count + 1, "\(order): \(seen)")
            // The last page's revision, used after another refund, brings that transaction and nothing else.
            let later = try #require(pass["afterTheLastPage"] as? [[String: Any]])
            #expect(later.map { $0["id"] as? String } == [pass["refundedAfterTheLastPage"] as? String], "\(later)")
            #expect(later.first?["revoked"] as? Bool == true && pass["afterTheLastPageHasMore"] as? Bool == false)
        }

        let refunded = Set(try #require(summary["refunded"] as? [String]))
        #expect(refunded.count == 6)
        #expect(Set(try #require(summary["revokedTrue"] as? [String])) == refunded)
        let notRevoked = try #require(summary["revokedFalse"] as? [String])
        #expect(Set(notRevoked) == Set(ids).subtracting(refunded) && notRevoked.count == ids.count - 6)
    }

    @Test(.enabled(if: PythonJudge.enabled, PythonJudge.skipMessage), arguments: TestDatabase.all)
    func notificationHistoryByTransactionIdIsTheWholeCustomerAndTheSandboxSendsOnce(_ database: TestDatabase)
        async throws
    {
        try PythonJudge.requireLibrary()
        let fixture = try await SimulatorFixture.make(database: database)
        let receiver = NotificationReceiver(failures: .max)
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var customer: [String] = []
        var otherCustomer: [String] = []
        try await withServices({ receiver.application(onServerRunning: $0) }) { receiverPort in
            _ = try await fixture.simulator.appStoreConnect.updateApp(
                appAppleId: fixture.app.appAppleId,
                AppPatch(notificationUrlSandbox: "http://127.0.0.1:\(receiverPort)/notifications")
            )
            let issue = try #require(try await fixture.buy("issue.1").transactionId)
            let pro = try #require(try await fixture.buy("pro").transactionId)
            let gems = try #require(try await fixture.buy("gems.100").transactionId)
            try await fixture.simulator.subscriptions.requestRefund(transactionId: gems, reason: .unintendedPurchase)
            _ = try await fixture.simulator.subscriptions.refund(transactionId: pro, reason: 1)
            customer = [issue, pro, gems]
            let other = try await fixture.simulator.appStoreConnect.createAccount(AccountInput(environment: "Sandbox"))
            let device = try await fixture.simulator.appStoreConnect.createDevice(accountId: other.id, DeviceInput())
            otherCustomer.append(try #require(try await fixture.buy("gems.100", on: device).transactionId))

            // Every notification is attempted once and refused by the receiver. Apple's sandbox does not retry:
            // even days later (past the whole production schedule), nothing is due again.
            #expect(try await fixture.simulator.notifications.deliverDueNotifications(client: client) == 6)
            _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 4 * 86_400)
            #expect(try await fixture.simulator.notifications.deliverDueNotifications(client: client) == 0)
        }
        try await client.shutdown()
        #expect(receiver.payloads.isEmpty)

        // Asked by the non-renewing subscription's transaction id: the customer's other purchases come too.
        let summary = try await judge(fixture, scenario: "notifications", ["customerTransactionId": customer[0]])
        let mine = try #require(summary["customer"] as? [[String: Any]], "\(summary)")
        let types = mine.compactMap { $0["type"] as? String }
        #expect(Set(types) == ["ONE_TIME_CHARGE", "CONSUMPTION_REQUEST", "REFUND"] && types.count == 5, "\(mine)")
        #expect(mine.allSatisfy { customer.contains($0["transactionId"] as? String ?? "") }, "\(mine)")
        let failures = try #require(summary["onlyFailures"] as? [[String: Any]])
        #expect(failures.count == 6 && failures.allSatisfy { $0["sendAttempts"] as? Int == 1 }, "\(failures)")
        #expect(failures.contains { otherCustomer.contains($0["transactionId"] as? String ?? "") })
    }

    @Test(.enabled(if: PythonJudge.enabled, PythonJudge.skipMessage), arguments: TestDatabase.all)
    func aFreeSubscriptionIsSignedAsNonConsumable(_ database: TestDatabase) async throws {
        try PythonJudge.requireLibrary()
        let fixture = try await SimulatorFixture.make(database: database)
        let free = try #require(try await fixture.buy("newsletter").signedTransaction)
        let summary = try await judge(fixture, scenario: "signed_data", ["transactions": [free]])
        let transactions = try #require(summary["transactions"] as? [[String: Any]], "\(summary)")
        #expect(transactions.first?["type"] as? String == "Non-Consumable", "\(transactions)")
    }

    @Test(.enabled(if: PythonJudge.enabled, PythonJudge.skipMessage), arguments: TestDatabase.all)
    func expirationIntentWaitsForExpiryAndGraceRecoveryKeepsThePaidDays(_ database: TestDatabase) async throws {
        try PythonJudge.requireLibrary()
        let fixture = try await SimulatorFixture.make(database: database, gracePeriodDays: 16)

        // One customer turns auto-renew off; when the period ends below, the subscription expires (intent 1).
        let leaving = try #require(try await fixture.buy("premium.monthly").transactionId)
        _ = try await fixture.simulator.subscriptions.setAutoRenew(originalTransactionId: leaving, enabled: false)

        // Another one's card fails at the first renewal and is fixed within the 16-day grace period.
        let other = try await fixture.simulator.appStoreConnect.createAccount(AccountInput(environment: "Sandbox"))
        let device = try await fixture.simulator.appStoreConnect.createDevice(accountId: other.id, DeviceInput())
        let recovering = try #require(try await fixture.buy("premium.monthly", on: device).transactionId)
        let first = try #require(
            try await fixture.simulator.store.purchases.transaction(id: recovering, on: fixture.simulator.store.sql)
        )
        let paidUntil = try #require(first.expiresDate)
        _ = try await fixture.simulator.appStoreConnect.updateAccount(id: other.id, AccountInput(paymentFailure: 0))
        // 5 minutes a month: the period ends after 300 s, and 16 days of grace are 160 s.
        let advance = Double(paidUntil - fixture.simulator.clock.nowMilliseconds) / 1000 + 1
        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: advance)
        #expect(
            try await fixture.simulator.store.subscriptions.subscription(
                originalTransactionId: recovering,
                on: fixture.simulator.store.sql
            )?
            .status == AppStoreSubscriptionStatus.gracePeriod.rawValue
        )
        _ = try await fixture.simulator.appStoreConnect.updateAccount(id: other.id, AccountInput(paymentFailure: -1))
        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 60)

        // A third customer turns auto-renew off now: still active, so no intent yet.
        let third = try await fixture.simulator.appStoreConnect.createAccount(AccountInput(environment: "Sandbox"))
        let thirdDevice = try await fixture.simulator.appStoreConnect.createDevice(accountId: third.id, DeviceInput())
        let active = try #require(try await fixture.buy("premium.monthly", on: thirdDevice).transactionId)
        _ = try await fixture.simulator.subscriptions.setAutoRenew(originalTransactionId: active, enabled: false)

        let summary = try await judge(
            fixture,
            scenario: "signed_data",
            ["subscriptions": [active, leaving, recovering]]
        )
        let subscriptions = try #require(summary["subscriptions"] as? [String: [String: Any]], "\(summary)")
        let stillActive = try #require(subscriptions[active])
        let activeRenewal = try #require(stillActive["renewalInfo"] as? [String: Any])
        #expect(stillActive["status"] as? Int == 1 && activeRenewal["autoRenewStatus"] as? Int == 0)
        #expect(activeRenewal["expirationIntent"] is NSNull, "\(activeRenewal)")
        let expired = try #require(subscriptions[leaving])
        #expect(expired["status"] as? Int == 2)
        #expect((expired["renewalInfo"] as? [String: Any])?["expirationIntent"] as? Int == 1, "\(expired)")

        let recovered = try #require(subscriptions[recovering])
        let renewal = try #require(recovered["transaction"] as? [String: Any])
        let renewalInfo = try #require(recovered["renewalInfo"] as? [String: Any])
        #expect(recovered["status"] as? Int == 1 && renewal["transactionId"] as? String != recovering)
        // The new period starts when the paid one ended, not when the card was fixed, and lasts a full period.
        let start = try #require(renewal["purchaseDate"] as? Int)
        let end = try #require(renewal["expiresDate"] as? Int)
        #expect(Int64(start) == paidUntil, "\(renewal)")
        #expect(abs(Int64(end - start) - (paidUntil - first.purchaseDate)) <= 1, "\(renewal)")
        #expect(renewalInfo["renewalDate"] as? Int == end && renewalInfo["gracePeriodExpiresDate"] is NSNull)
        #expect(renewalInfo["expirationIntent"] is NSNull && renewalInfo["isInBillingRetryPeriod"] as? Bool == false)
    }
}
