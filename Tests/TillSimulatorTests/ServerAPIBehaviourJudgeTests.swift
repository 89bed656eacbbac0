import AsyncHTTPClient
import Foundation
import Testing
import TillCore
import TillFormats

@testable import TillSimulator

/// Apple's official Python library calls the simulator's App Store Server API over HTTP and decodes what it
/// answers (judge/server_api_behaviour_judge.py); these tests check that what it saw is what Apple documents.
struct ServerAPIBehaviourJudgeTests {
    /// The part of a judge's spec every scenario needs: trust, app and API key.
    func spec(_ fixture: SimulatorFixture, port: Int, scenario: String) async throws -> [String: Any] {
        let credentials = try await fixture.simulator.createAPIKey(appAppleId: fixture.app.appAppleId)
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
        try await withLiveServer({ buildSimulatorApplication(fixture.simulator, port: 0, onServerRunning: $0) }) {
            port in
            let spec = try await spec(fixture, port: port, scenario: scenario).merging(extra) { $1 }
            let (status, output) = try await PythonJudge.run("server_api_behaviour_judge.py", spec: spec)
            #expect(status == 0, "\(output)")
            summary = output
        }
        return summary
    }

    @Test(.enabled(if: PythonJudge.enabled, PythonJudge.skipMessage))
    func historyRevisionsSurviveRefundsWhilePagingAndRevokedTakesPythonsBooleans() async throws {
        try PythonJudge.requireLibrary()
        let fixture = try await SimulatorFixture.make()
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

    @Test(.enabled(if: PythonJudge.enabled, PythonJudge.skipMessage))
    func notificationHistoryByTransactionIdIsTheWholeCustomerAndTheSandboxSendsOnce() async throws {
        try PythonJudge.requireLibrary()
        let fixture = try await SimulatorFixture.make()
        let receiver = NotificationReceiver(failures: .max)
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var customer: [String] = []
        var otherCustomer: [String] = []
        try await withLiveServer({ receiver.application(onServerRunning: $0) }) { receiverPort in
            _ = try await fixture.simulator.updateApp(
                appAppleId: fixture.app.appAppleId,
                AppPatch(notificationUrlSandbox: "http://127.0.0.1:\(receiverPort)/notifications")
            )
            let issue = try #require(try await fixture.buy("issue.1").transactionId)
            let pro = try #require(try await fixture.buy("pro").transactionId)
            let gems = try #require(try await fixture.buy("gems.100").transactionId)
            try await fixture.simulator.requestRefund(transactionId: gems, reason: .unintendedPurchase)
            _ = try await fixture.simulator.refund(transactionId: pro, reason: 1)
            customer = [issue, pro, gems]
            let other = try await fixture.simulator.createAccount(AccountInput(environment: "Sandbox"))
            let device = try await fixture.simulator.createDevice(accountId: other.id, DeviceInput())
            otherCustomer.append(try #require(try await fixture.buy("gems.100", on: device).transactionId))

            // Every notification is attempted once and refused by the receiver. Apple's sandbox does not retry:
            // even days later (past the whole production schedule), nothing is due again.
            #expect(try await fixture.simulator.deliverDueNotifications(client: client) == 6)
            _ = try await fixture.simulator.advanceClock(seconds: 4 * 86_400)
            #expect(try await fixture.simulator.deliverDueNotifications(client: client) == 0)
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

    @Test(.enabled(if: PythonJudge.enabled, PythonJudge.skipMessage))
    func aFreeSubscriptionIsSignedAsNonConsumable() async throws {
        try PythonJudge.requireLibrary()
        let fixture = try await SimulatorFixture.make()
        let free = try #require(try await fixture.buy("newsletter").signedTransaction)
        let summary = try await judge(fixture, scenario: "signed_data", ["transactions": [free]])
        let transactions = try #require(summary["transactions"] as? [[String: Any]], "\(summary)")
        #expect(transactions.first?["type"] as? String == "Non-Consumable", "\(transactions)")
    }
}
