import Foundation
import Testing
import TillCore
import TillFormats
import TillHTTPKit
import TillTestSupport

@testable import TillSimulator

/// Monthly billing with a 12-month commitment (April 2026): a 1-year product's plan, a transaction a month, the
/// months owed after a cancellation, and what the signed data says of it.
@Suite(.sharingTheMachine)
struct CommitmentPlanTests {
    @Test(arguments: TestDatabase.all) func twelveMonthsAreBilledMonthlyAndACancellationEndsTheCommitmentNotTheMonth(
        _ database: TestDatabase
    ) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        let simulator = fixture.simulator
        let app = fixture.app.appAppleId
        _ = try await simulator.appStoreConnect.updateProduct(
            appAppleId: app,
            productId: "premium.yearly",
            ProductInput(
                prices: ["USA": .init(price: 9990, currency: "USD"), "FRA": .init(price: 11990, currency: "EUR")],
                monthlyCommitmentPrices: ["FRA": .init(price: 1090, currency: "EUR")]
            )
        )
        await #expect {
            _ = try await simulator.appStoreConnect.updateProduct(
                appAppleId: app, productId: "premium.monthly",
                ProductInput(monthlyCommitmentPrices: ["FRA": .init(price: 100, currency: "EUR")])
            )
        } throws: { $0 is any Refusal }
        let american = try await fixture.simulator.payments.addPayment(
            PaymentRequest(deviceId: fixture.phone.id, bundleId: SimulatorFixture.bundleId, productId: "premium.yearly",
                           billingPlanType: "MONTHLY"),
            environment: .sandbox
        )
        #expect(american.error?.code == StoreKitErrorCode.storeProductNotAvailable.rawValue)

        let french = try await simulator.appStoreConnect.createAccount(AccountInput(environment: "Sandbox", storefront: "FRA"))
        let phone = try await simulator.appStoreConnect.createDevice(accountId: french.id, DeviceInput(name: "iPhone"))
        let bought = try await simulator.payments.addPayment(
            PaymentRequest(deviceId: phone.id, bundleId: SimulatorFixture.bundleId, productId: "premium.yearly",
                           billingPlanType: "MONTHLY"),
            environment: .sandbox
        )
        let original = try #require(bought.transactionId)
        let first = try #require(try await simulator.store.purchases.transaction(id: original, on: simulator.store.sql))
        #expect(first.price == 1090 && first.billingPlanType == "MONTHLY" && first.commitmentPeriod == 1)
        #expect(first.expiresDate! - first.purchaseDate == 300_000)
        #expect(first.commitmentExpiresDate! - first.purchaseDate == 3_600_000 && first.commitmentPrice == 13_080)

        _ = try await simulator.subscriptions.advanceClock(seconds: 301)
        _ = try await simulator.subscriptions.setAutoRenew(originalTransactionId: original, enabled: false)
        let cancelled = try #require(try await simulator.store.subscriptions.subscription(originalTransactionId: original, on: simulator.store.sql))
        #expect(cancelled.autoRenewStatus && cancelled.commitmentAutoRenew == false && cancelled.commitmentPeriod == 2)
        let renewal = try await simulator.payments.signedRenewalInfo(
            deviceId: phone.id, originalTransactionId: original, environment: .sandbox
        )
        guard case .valid(let info) = await fixture.jwsVerifier.verify(renewal, as: JWSRenewalInfoDecodedPayload.self)
        else { throw Failure("the renewal info does not verify") }
        #expect(info.payload.renewalBillingPlanType == .monthly && info.payload.commitmentInfo?.commitmentAutoRenewStatus == .off)
        #expect(info.payload.autoRenewStatus == .on && info.payload.renewalPrice == 1090)

        _ = try await simulator.subscriptions.advanceClock(seconds: 11 * 300)
        let months = try await simulator.store.purchases.transactions(originalTransactionId: original, on: simulator.store.sql)
        #expect(months.map(\.commitmentPeriod) == Array(1...12).map { Optional($0) })
        let ended = try #require(try await simulator.store.subscriptions.subscription(originalTransactionId: original, on: simulator.store.sql))
        #expect(ended.status == AppStoreSubscriptionStatus.expired.rawValue)
        let signed = try simulator.receipts.signTransaction(try #require(months.last), app: fixture.app)
        guard case .valid(let last) = await fixture.jwsVerifier.verify(signed, as: JWSTransactionDecodedPayload.self)
        else { throw Failure("the twelfth month does not verify") }
        #expect(last.payload.billingPlanType == .monthly && last.payload.commitmentInfo?.billingPeriodNumber == 12)
        #expect(last.payload.commitmentInfo?.totalBillingPeriods == 12)
    }
}
