import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SQLKit
import Testing
import TillAppStore
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// App Store Server Notifications V2, delivered by the simulator standing in for Apple to the server on a port.
@Suite(.sharingTheMachine)
struct NotificationTests {
    struct Timeout: Error, CustomStringConvertible {
        var description: String
    }

    /// Runs the server on a loopback port and points the simulator's sandbox notifications at it.
    func withNotifications(
        _ fixture: ServerFixture,
        gracePeriodDays: Int? = nil,
        _ body: () async throws -> Void
    ) async throws {
        let server = fixture.server
        try await withServices({ report in
            Application(
                router: buildServerRouter(server),
                configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { await report($0.localAddress?.port ?? 0) }
            )
        }) { port in
            _ = try await fixture.simulator.appStoreConnect.updateApp(
                appAppleId: try #require(fixture.app.appAppleId),
                AppPatch(
                    notificationUrlSandbox: "http://127.0.0.1:\(port)/v1/apple/notifications",
                    gracePeriodDays: gracePeriodDays
                )
            )
            try await body()
        }
    }

    /// Waits until the simulator delivered the newest notification of this type (the server answered 2xx),
    /// and returns what the server recorded for it.
    func delivered(
        _ type: NotificationType,
        _ subtype: NotificationSubtype? = nil,
        _ fixture: ServerFixture,
        timeout: Duration = .seconds(60)
    ) async throws -> NotificationRecord {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        let store = NotificationStore(database: fixture.server.database)
        var seen = "nothing read"
        while clock.now < deadline {
            let log = try await fixture.simulator.notifications.notificationLog(
                appAppleId: try #require(fixture.app.appAppleId),
                environment: .sandbox
            )
            let entry = log.last { $0.notificationType == type.rawValue && $0.subtype == subtype?.rawValue }
            if let entry, entry.state == .delivered,
                let record = try await store.notification(uuid: entry.notificationUUID, on: store.sql)
            {
                return record
            }
            // What a timeout says: whether the simulator never made it, failed to deliver it (the sandbox does not
            // retry), or delivered it and the server did not record it; and where the other notifications stand.
            let states: [String: Int] = Dictionary(grouping: log, by: \.state.rawValue).mapValues(\.count)
            let made = entry.map { "its state \($0.state.rawValue) after \($0.attempts) attempts" }
            seen =
                (made ?? "not made by the simulator") + "; the log: "
                + states.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
            try await Task.sleep(for: .milliseconds(50))
        }
        throw Timeout(
            description: "no \(type.rawValue) \(subtype?.rawValue ?? "") was delivered and recorded (\(seen))"
        )
    }

    func count(_ fixture: ServerFixture, _ query: SQLQueryString) async throws -> Int {
        try await fixture.server.database.sql.raw(query).first()?.decode(column: "n", as: Int.self) ?? 0
    }

    func customer(_ fixture: ServerFixture, _ id: String) async throws -> CustomerView {
        try await fixture.server.customers.customer(bundleId: ServerFixture.bundleId, customerId: id)
    }

    func submit(_ fixture: ServerFixture, _ purchase: QueueTransaction, as customerId: String) async throws {
        let result = try await fixture.server.intake.submit(
            SubmissionRequest(customerId: customerId, signedTransaction: purchase.signedTransaction),
            app: fixture.app
        )
        #expect(try await fixture.settled(result).state == .confirmed)
    }

    func post(_ client: some TestClientProtocol, _ signedPayload: String) async throws -> (Int, [String: Any]) {
        try await client.execute(
            uri: "/v1/apple/notifications",
            method: .post,
            body: ByteBuffer(string: #"{"signedPayload":"\#(signedPayload)"}"#)
        ) { response in
            (
                Int(response.status.code),
                (try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView))) as? [String: Any]
                    ?? [:]
            )
        }
    }

    func errorCode(_ reply: (Int, [String: Any])) -> String? {
        (reply.1["error"] as? [String: Any])?["code"] as? String
    }

    /// The payload of a signed transaction, to forge variants of it.
    func decodedTransaction(_ jws: String) throws -> JWSTransactionDecodedPayload {
        let payload = try #require(Base64.decode(jws.split(separator: ".")[1], alphabet: .url))
        return try AppleJSON.makeDecoder().decode(JWSTransactionDecodedPayload.self, from: Data(payload))
    }

    // MARK: End to end

    @Test(arguments: TestDatabase.all) func aRenewalIsRecordedForTheSubscriptionsOwnerAndMovesTheEntitlement(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database, followSimulatorClock: true) { fixture in
            try await withNotifications(fixture) {
                let purchase = try await fixture.buy("premium.monthly")
                let transactionId = try #require(purchase.transactionId)
                // Apple tells the server before the app does: no customer owns it yet, and none is invented.
                let subscribed = try await delivered(.subscribed, .initialBuy, fixture)
                #expect(subscribed.outcome == .unmatched && subscribed.customerId == nil)
                #expect(try await count(fixture, "SELECT COUNT(*) AS n FROM srv_transactions") == 0)

                try await submit(fixture, purchase, as: "c1")
                let firstEnd = try #require(try await customer(fixture, "c1").entitlements.first?.expiresDate)

                _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
                let renewed = try await delivered(.didRenew, nil, fixture)
                #expect(renewed.outcome == .applied && renewed.customerId == "c1")
                let renewalId = try #require(renewed.transactionId)
                #expect(renewalId != transactionId)

                let after = try await customer(fixture, "c1")
                #expect(after.purchases.map(\.transactionId).sorted() == [transactionId, renewalId].sorted())
                let renewal = try #require(after.purchases.first { $0.transactionId == renewalId })
                #expect(renewal.originalTransactionId == transactionId && renewal.confirmed)
                // The first period is over on the server's clock too: only the renewal grants access now.
                #expect(after.entitlements.map(\.id) == ["premium"])
                #expect(after.entitlements.first?.transactionId == renewalId)
                #expect(try #require(after.entitlements.first?.expiresDate) > firstEnd)
                #expect(after.entitlements.first?.expiresDate == renewal.expiresDate)
                #expect(
                    try await count(
                        fixture,
                        "SELECT COUNT(*) AS n FROM srv_finance WHERE transaction_id = \(bind: renewalId) AND kind = 'purchase' AND amount = 990"
                    ) == 1
                )

                _ = try await fixture.simulator.subscriptions.setAutoRenew(
                    originalTransactionId: transactionId,
                    enabled: false
                )
                _ = try await delivered(.didChangeRenewalStatus, .autoRenewDisabled, fixture)
                let state = try #require(try await customer(fixture, "c1").subscriptions.first)
                #expect(state.originalTransactionId == transactionId && state.autoRenewStatus == false)
                // Apple gives a reason for expiring only once the subscription has expired.
                #expect(state.expirationIntent == nil && state.status == "active")
            }
        }
    }

    @Test(arguments: TestDatabase.all) func aRefundTakesAccessAwayAndCountsNegative(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            let subscription = try await fixture.buy("premium.monthly")
            let gems = try await fixture.buy("gems.100")
            try await submit(fixture, subscription, as: "c1")
            try await submit(fixture, gems, as: "c1")
            #expect(try await customer(fixture, "c1").entitlements.map(\.id) == ["premium"])
            #expect(try await customer(fixture, "c1").balances == ["gems": 100])

            try await withNotifications(fixture) {
                let subscriptionId = try #require(subscription.transactionId)
                _ = try await fixture.simulator.subscriptions.refund(transactionId: subscriptionId, reason: 1)
                let refunded = try await delivered(.refund, nil, fixture)
                #expect(refunded.outcome == .applied && refunded.customerId == "c1")
                let customer = try await customer(fixture, "c1")
                #expect(customer.entitlements.isEmpty)
                let purchase = try #require(customer.purchases.first { $0.transactionId == subscriptionId })
                #expect(purchase.revocationReason == .refund && purchase.revocationDate != nil)
                #expect(customer.subscriptions.first?.status == "revoked")
                #expect(
                    try await count(
                        fixture,
                        "SELECT COUNT(*) AS n FROM srv_finance WHERE transaction_id = \(bind: subscriptionId) AND kind = 'refund' AND amount = -990 AND environment = 'Sandbox'"
                    ) == 1
                )

                // A refunded consumable takes its credits back.
                _ = try await fixture.simulator.subscriptions.refund(
                    transactionId: try #require(gems.transactionId),
                    reason: 0
                )
                try await waitUntil { try await self.customer(fixture, "c1").balances == ["gems": 0] }
                // Sandbox money never reaches the revenue report.
                let report = try await fixture.server.figures.revenue(
                    bundleId: ServerFixture.bundleId,
                    from: 0,
                    to: Int64.max,
                    groupBy: .currency
                )
                #expect(report.rows.isEmpty)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func anUpgradeRetiresTheReplacedPeriodAndGrantsTheNewProduct(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let appAppleId = try #require(fixture.app.appAppleId)
            _ = try await fixture.simulator.appStoreConnect.updateProduct(
                appAppleId: appAppleId,
                productId: "premium.monthly",
                ProductInput(groupLevel: 2)
            )
            _ = try await fixture.simulator.appStoreConnect.createProduct(
                appAppleId: appAppleId,
                ProductInput(
                    productId: "premium.plus",
                    type: .autoRenewable,
                    subscriptionGroup: "premium",
                    subscriptionPeriod: .oneMonth,
                    groupLevel: 1,
                    price: 1990
                )
            )
            _ = try await fixture.server.catalogue.putProduct(
                bundleId: ServerFixture.bundleId,
                productId: "premium.plus",
                CatalogProductInput(
                    type: .autoRenewable,
                    entitlements: ["premium", "plus"],
                    subscriptionGroup: "premium"
                )
            )
            let monthly = try await fixture.buy("premium.monthly")
            try await submit(fixture, monthly, as: "c1")
            try await withNotifications(fixture) {
                _ = try await fixture.buy("premium.plus")
                let upgraded = try await delivered(.didChangeRenewalPref, .upgrade, fixture)
                #expect(upgraded.outcome == .applied && upgraded.customerId == "c1")
                let plusId = try #require(upgraded.transactionId)
                let customer = try await customer(fixture, "c1")
                let replaced = try #require(customer.purchases.first { $0.transactionId == monthly.transactionId })
                #expect(replaced.revocationReason == .upgraded)
                #expect(customer.purchases.first { $0.transactionId == plusId }?.productId == "premium.plus")
                #expect(customer.entitlements.map(\.id) == ["plus", "premium"])
                #expect(customer.entitlements.allSatisfy { $0.transactionId == plusId })
                #expect(
                    try await count(
                        fixture,
                        "SELECT COUNT(*) AS n FROM srv_finance WHERE transaction_id = \(bind: plusId) AND kind = 'purchase' AND amount = 1990"
                    ) == 1
                )
            }
        }
    }

    @Test(arguments: TestDatabase.all) func aRetriedDeliveryIsAnsweredDuplicateAndChangesNothing(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let purchase = try await fixture.buy("premium.monthly")
            try await submit(fixture, purchase, as: "c1")
            // No URL configured: the simulator keeps the renewal's notification for us to deliver by hand.
            _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
            let log = try await fixture.simulator.notifications.notificationLog(
                appAppleId: try #require(fixture.app.appAppleId),
                environment: .sandbox
            )
            let renewal = try #require(log.last { $0.notificationType == "DID_RENEW" })
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                async let first = post(client, renewal.signedPayload)
                async let second = post(client, renewal.signedPayload)
                let answers = try await [first, second]
                #expect(answers.map(\.0) == [200, 200])
                #expect(answers.compactMap { $0.1["status"] as? String }.sorted() == ["applied", "duplicate"])
                #expect(answers.allSatisfy { $0.1["notificationUUID"] as? String == renewal.notificationUUID })
                let ledger = try await count(fixture, "SELECT COUNT(*) AS n FROM srv_transactions")
                let finance = try await count(fixture, "SELECT COUNT(*) AS n FROM srv_finance")
                #expect(ledger == 2 && finance == 2)

                let third = try await post(client, renewal.signedPayload)
                #expect(third.0 == 200 && third.1["status"] as? String == "duplicate")
                #expect(try await count(fixture, "SELECT COUNT(*) AS n FROM srv_transactions") == ledger)
                #expect(try await count(fixture, "SELECT COUNT(*) AS n FROM srv_finance") == finance)
                #expect(try await count(fixture, "SELECT COUNT(*) AS n FROM srv_notifications") == 1)
                #expect(try await customer(fixture, "c1").purchases.count == 2)

                let exposition = String(decoding: try await fixture.server.metricsExposition(), as: UTF8.self)
                let lines = Set(exposition.split(separator: "\n").map(String.init))
                #expect(lines.contains(#"till_notifications_total{type="DID_RENEW",outcome="applied"} 1"#))
                #expect(lines.contains(#"till_notifications_total{type="DID_RENEW",outcome="duplicate"} 2"#))
                _ = try await post(client, "not.a.jws")
                let after = String(decoding: try await fixture.server.metricsExposition(), as: UTF8.self)
                #expect(after.contains(#"till_notifications_total{type="unknown",outcome="refused"} 1"#))
            }
        }
    }
}
