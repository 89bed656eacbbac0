import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

extension NotificationTests {
    /// Monthly billing with a 12-month commitment, the simulator delivering Apple's notifications: the customer view
    /// shows the plan and the commitment, each month's place in it, and a customer who cancels keeps access through
    /// the months owed (`autoRenewStatus` stays on, only the commitment's turns off) until the twelfth ends.
    @Test(arguments: TestDatabase.all)
    func aCommitmentShowsItsPlanAndMonthsAndACancelledOneKeepsAccessThroughTheMonthsOwed(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database, followSimulatorClock: true) { fixture in
            let simulator = fixture.simulator
            _ = try await simulator.appStoreConnect.createProduct(
                appAppleId: try #require(fixture.app.appAppleId),
                ProductInput(
                    productId: "premium.yearly",
                    type: .autoRenewable,
                    subscriptionGroup: "premium",
                    subscriptionPeriod: .oneYear,
                    prices: ["USA": .init(price: 9990, currency: "USD"), "FRA": .init(price: 11990, currency: "EUR")],
                    monthlyCommitmentPrices: ["FRA": .init(price: 1090, currency: "EUR")]
                )
            )
            _ = try await fixture.server.catalogue.putProduct(
                bundleId: ServerFixture.bundleId,
                productId: "premium.yearly",
                CatalogProductInput(type: .autoRenewable, entitlements: ["premium"], subscriptionGroup: "premium")
            )
            let french = try await simulator.appStoreConnect.createAccount(
                AccountInput(environment: "Sandbox", storefront: "FRA")
            )
            let phone = try await simulator.appStoreConnect.createDevice(
                accountId: french.id,
                DeviceInput(name: "iPhone")
            )

            try await withNotifications(fixture) {
                let bought = try await simulator.payments.addPayment(
                    PaymentRequest(
                        deviceId: phone.id,
                        bundleId: ServerFixture.bundleId,
                        productId: "premium.yearly",
                        billingPlanType: "MONTHLY"
                    ),
                    environment: .sandbox
                )
                let original = try #require(bought.transactionId)
                try await submit(fixture, bought, as: "amelie")
                _ = try await delivered(.subscribed, .initialBuy, fixture)

                let first = try await customer(fixture, "amelie")
                let month1 = try #require(first.purchases.first)
                #expect(month1.billingPlanType == "MONTHLY")
                #expect(month1.commitment?.billingPeriodNumber == 1 && month1.commitment?.totalBillingPeriods == 12)
                let commitmentEnd = try #require(month1.commitment?.expiresDate)
                #expect(commitmentEnd - month1.purchaseDate == 3_600_000, "twelve sandbox months of five minutes")
                let state = try #require(first.subscriptions.first { $0.originalTransactionId == original })
                #expect(state.billingPlanType == "MONTHLY" && state.autoRenewStatus == true)
                let commitment = try #require(state.commitment)
                #expect(commitment.autoRenewStatus == true && commitment.renewalDate == commitmentEnd)
                #expect(commitment.renewalPrice == 13_080 && commitment.currency == "EUR")
                #expect(commitment.renewalBillingPlanType == "MONTHLY")

                // The second month, then the customer cancels: the next commitment is off, the months owed are not.
                _ = try await simulator.subscriptions.advanceClock(seconds: 301)
                let renewed = try await delivered(.didRenew, nil, fixture)
                #expect(renewed.outcome == .applied && renewed.customerId == "amelie")
                _ = try await simulator.subscriptions.setAutoRenew(originalTransactionId: original, enabled: false)
                _ = try await delivered(.didChangeRenewalStatus, .autoRenewDisabled, fixture)
                let cancelled = try await customer(fixture, "amelie")
                let cancelledState = try #require(cancelled.subscriptions.first)
                #expect(cancelledState.autoRenewStatus == true && cancelledState.commitment?.autoRenewStatus == false)
                #expect(cancelledState.billingPlanType == "MONTHLY")
                let month2 = try #require(cancelled.purchases.first { $0.commitment?.billingPeriodNumber == 2 })
                #expect(month2.billingPlanType == "MONTHLY" && month2.confirmed)

                // A month owed renews after the cancellation, and access follows that month's own end.
                _ = try await simulator.subscriptions.advanceClock(seconds: 300)
                try await waitUntil() {
                    try await self.customer(fixture, "amelie").purchases.count == 3
                }
                let owed = try await customer(fixture, "amelie")
                let month3 = try #require(owed.purchases.first { $0.commitment?.billingPeriodNumber == 3 })
                let access = try #require(owed.entitlements.first { $0.id == "premium" })
                #expect(access.transactionId == month3.transactionId && access.expiresDate == month3.expiresDate)
                #expect(try #require(month3.expiresDate) < commitmentEnd)

                // The rest of the twelve, then it expires: no thirteenth month, no access.
                _ = try await simulator.subscriptions.advanceClock(seconds: 10 * 300)
                _ = try await delivered(.expired, .voluntary, fixture)
                // Each notification is delivered in a task of its own: the last months may land after EXPIRED.
                try await waitUntil() {
                    try await self.customer(fixture, "amelie").purchases.count == 12
                }
                let ended = try await customer(fixture, "amelie")
                #expect(
                    ended.purchases.compactMap(\.commitment?.billingPeriodNumber).sorted() == Array(1...12),
                    "\(ended.purchases.map { ($0.transactionId, $0.commitment?.billingPeriodNumber) })"
                )
                #expect(ended.entitlements.isEmpty)
                let endedState = try #require(ended.subscriptions.first)
                #expect(endedState.status == "expired" && endedState.expiresDate == commitmentEnd)

                // The app API's hand-written body says the same as the customer view.
                try await Application(router: buildServerRouter(fixture.server)).test(.router) { client in
                    let reply = try await client.call(.get, "/v1/customers/amelie", token: fixture.app.appKey)
                    let view = try reply.decode(Components.Schemas.Customer.self)
                    #expect(view.subscriptions.first?.commitment == endedState.commitment)
                    #expect(view.purchases.compactMap(\.commitment).count == 12)
                }
            }
        }
    }
}
