import Foundation
import SQLKit
import Testing
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// The notification types Apple added since 2023, sent by the simulator as Apple sends them and applied by the
/// server: a refund reversed gives access back, a renewal extension moves the expiry, a prorated refund takes back
/// its share, a price increase and the customer's consent show on the subscription.
extension NotificationTests {
    @Test(arguments: TestDatabase.all) func aReversedRefundGivesAccessBackAndCancelsTheRefund(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            let pro = try await fixture.buy("pro")
            try await submit(fixture, pro, as: "c1")
            let proId = try #require(pro.transactionId)
            try await withNotifications(fixture) {
                _ = try await fixture.simulator.subscriptions.refund(transactionId: proId, reason: 0)
                _ = try await delivered(.refund, nil, fixture)
                #expect(try await customer(fixture, "c1").entitlements.isEmpty)
                _ = try await fixture.simulator.subscriptions.reverseRefund(transactionId: proId)
                let reversed = try await delivered(.refundReversed, nil, fixture)
                #expect(reversed.outcome == .applied && reversed.customerId == "c1")
                let customer = try await customer(fixture, "c1")
                #expect(customer.entitlements.map(\.id) == ["pro"])
                #expect(customer.purchases.first { $0.transactionId == proId }?.revocationDate == nil)
                #expect(
                    try await count(
                        fixture,
                        "SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) AS n FROM srv_finance WHERE transaction_id = \(bind: proId)"
                    ) == 4990
                )
            }
        }
    }

    @Test(arguments: TestDatabase.all) func anExtensionMovesTheEntitlementAndAProratedRefundTakesBackItsShare(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let subscription = try await fixture.buy("premium.monthly")
            let gems = try await fixture.buy("gems.100")
            try await submit(fixture, subscription, as: "c1")
            try await submit(fixture, gems, as: "c1")
            let original = try #require(subscription.transactionId)
            let before = try #require(try await customer(fixture, "c1").entitlements.first?.expiresDate)
            try await withNotifications(fixture) {
                let simApp = try #require(
                    try await fixture.simulator.store.appStoreConnect.app(bundleId: ServerFixture.bundleId, on: fixture.simulator.store.sql)
                )
                _ = try await fixture.simulator.subscriptions.extendRenewalDate(
                    originalTransactionId: original, app: simApp, environment: .sandbox, days: 30, reason: 3,
                    requestIdentifier: "outage"
                )
                let extended = try await delivered(.renewalExtended, nil, fixture)
                #expect(extended.outcome == .applied)
                let after = try #require(try await customer(fixture, "c1").entitlements.first?.expiresDate)
                #expect(after == before + 300_000)

                _ = try await fixture.simulator.subscriptions.refund(
                    transactionId: try #require(gems.transactionId), reason: 0, percentage: 25_000
                )
                _ = try await delivered(.refund, nil, fixture)
                // A quarter of 9.90, in milliunits, rounded down.
                #expect(
                    try await count(
                        fixture,
                        "SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) AS n FROM srv_finance WHERE transaction_id = \(bind: gems.transactionId ?? "") AND kind = 'refund'"
                    ) == -247
                )
            }
        }
    }

    @Test(arguments: TestDatabase.all) func aPriceIncreaseFromTheSimulatorAndTheConsentShowOnTheSubscription(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let subscription = try await fixture.buy("premium.monthly")
            try await submit(fixture, subscription, as: "c1")
            let original = try #require(subscription.transactionId)
            try await withNotifications(fixture) {
                let simApp = try #require(
                    try await fixture.simulator.store.appStoreConnect.app(bundleId: ServerFixture.bundleId, on: fixture.simulator.store.sql)
                )
                _ = try await fixture.simulator.subscriptions.increasePrice(
                    appAppleId: simApp.appAppleId, productId: "premium.monthly", PriceIncreaseInput(price: 9990)
                )
                _ = try await delivered(.priceIncrease, .pending, fixture)
                let pending = try #require(try await customer(fixture, "c1").subscriptions.first)
                #expect(pending.originalTransactionId == original && pending.priceIncreaseStatus == 0)
                _ = try await fixture.simulator.subscriptions.respondToPriceIncrease(
                    originalTransactionId: original, accept: true
                )
                _ = try await delivered(.priceIncrease, .accepted, fixture)
                #expect(try await customer(fixture, "c1").subscriptions.first?.priceIncreaseStatus == 1)
            }
        }
    }
}
