import Foundation
import Testing
import TillCore
import TillFormats
import TillHTTPKit
import TillTestSupport

@testable import TillSimulator

/// Subscriptions over accelerated sandbox time ("monthly renews every 5 minutes"), moved by the admin clock.
@Suite(.sharingTheMachine)
struct SubscriptionTests {
    func subscription(_ fixture: SimulatorFixture, _ originalTransactionId: String) async throws -> SimSubscription {
        try #require(
            try await fixture.simulator.store.subscriptions.subscription(
                originalTransactionId: originalTransactionId,
                on: fixture.simulator.store.sql
            )
        )
    }

    @Test(arguments: TestDatabase.all) func aMonthlySubscriptionRenewsEveryFiveMinutesAndStopsAfterTwelveRenewals(
        _ database: TestDatabase
    ) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        let purchase = try await fixture.buy("premium.monthly")
        let original = try #require(purchase.transactionId)
        let first = try await subscription(fixture, original)
        #expect(first.expiresDate - (purchase.purchaseDate ?? 0) == 300_000)

        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
        var state = try await subscription(fixture, original)
        #expect(state.renewalCount == 1 && state.status == 1)
        #expect(state.expiresDate == first.expiresDate + 300_000)

        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 3600)
        state = try await subscription(fixture, original)
        #expect(state.renewalCount == 12 && state.status == AppStoreSubscriptionStatus.expired.rawValue)
        let receipt = try await fixture.receipt()
        #expect(receipt.inAppPurchases.count == 13)
        #expect(Set(receipt.inAppPurchases.map(\.originalTransactionId)) == [original])
        let kinds = try await fixture.notificationKinds()
        #expect(kinds.first == "SUBSCRIBED/INITIAL_BUY")
        #expect(kinds.filter { $0 == "DID_RENEW" }.count == 12)
        #expect(kinds.last == "EXPIRED/VOLUNTARY")
    }

    @Test(arguments: TestDatabase.all) func aFailedRenewalGoesThroughGraceAndBillingRetryThenRecovers(
        _ database: TestDatabase
    ) async throws {
        let fixture = try await SimulatorFixture.make(database: database, gracePeriodDays: 16)
        let original = try #require(try await fixture.buy("premium.monthly").transactionId)
        _ = try await fixture.simulator.appStoreConnect.updateAccount(
            id: fixture.account.id,
            AccountInput(paymentFailure: 0)
        )
        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
        var state = try await subscription(fixture, original)
        #expect(state.status == AppStoreSubscriptionStatus.gracePeriod.rawValue && state.billingRetry)
        // 16 days at 5 minutes a month: 160 seconds of grace.
        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 170)
        state = try await subscription(fixture, original)
        #expect(state.status == AppStoreSubscriptionStatus.billingRetry.rawValue)

        _ = try await fixture.simulator.appStoreConnect.updateAccount(
            id: fixture.account.id,
            AccountInput(paymentFailure: -1)
        )
        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 1)
        state = try await subscription(fixture, original)
        #expect(state.status == AppStoreSubscriptionStatus.active.rawValue && state.renewalCount == 1)
        let kinds = try await fixture.notificationKinds()
        #expect(kinds.contains("DID_FAIL_TO_RENEW/GRACE_PERIOD"))
        #expect(kinds.contains("GRACE_PERIOD_EXPIRED"))
        #expect(kinds.last == "DID_RENEW/BILLING_RECOVERY")
    }

    @Test(arguments: TestDatabase.all) func aCardFixedWithinTheGracePeriodKeepsThePaidDaysUninterrupted(
        _ database: TestDatabase
    ) async throws {
        let fixture = try await SimulatorFixture.make(database: database, gracePeriodDays: 16)
        let original = try #require(try await fixture.buy("premium.monthly").transactionId)
        let paidUntil = try await subscription(fixture, original).expiresDate
        _ = try await fixture.simulator.appStoreConnect.updateAccount(
            id: fixture.account.id,
            AccountInput(paymentFailure: 0)
        )
        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
        #expect(try await subscription(fixture, original).status == AppStoreSubscriptionStatus.gracePeriod.rawValue)
        // Fixed a minute into the 160 s of grace: the next period starts when the paid one ended.
        _ = try await fixture.simulator.appStoreConnect.updateAccount(
            id: fixture.account.id,
            AccountInput(paymentFailure: -1)
        )
        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 60)
        let state = try await subscription(fixture, original)
        #expect(state.status == AppStoreSubscriptionStatus.active.rawValue && state.expiresDate == paidUntil + 300_000)
        let renewal = try #require(
            try await fixture.simulator.store.purchases.transaction(
                id: state.lastTransactionId,
                on: fixture.simulator.store.sql
            )
        )
        #expect(renewal.purchaseDate == paidUntil && renewal.transactionReason == "RENEWAL")
        #expect(try await fixture.notificationKinds().last == "DID_RENEW/BILLING_RECOVERY")
    }

    @Test(arguments: TestDatabase.all) func turningAutoRenewOffLeavesNoExpirationIntentUntilTheSubscriptionExpires(
        _ database: TestDatabase
    ) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        let original = try #require(try await fixture.buy("premium.monthly").transactionId)
        _ = try await fixture.simulator.subscriptions.setAutoRenew(originalTransactionId: original, enabled: false)
        var state = try await subscription(fixture, original)
        #expect(state.status == AppStoreSubscriptionStatus.active.rawValue && !state.autoRenewStatus)
        #expect(state.expirationIntent == nil)
        let signed = try await fixture.simulator.payments.signedRenewalInfo(
            deviceId: fixture.phone.id,
            originalTransactionId: original,
            environment: .sandbox
        )
        let renewal = try #require(
            await fixture.jwsVerifier.verify(signed, as: JWSRenewalInfoDecodedPayload.self).value
        ).payload
        #expect(renewal.expirationIntent == nil && renewal.autoRenewStatus == AutoRenewStatus(rawValue: 0))
        // verifyReceipt's pending_renewal_info leaves expiration_intent out too.
        let receipt = try await fixture.simulator.payments.appReceipt(
            deviceId: fixture.phone.id,
            bundleId: SimulatorFixture.bundleId,
            environment: .sandbox
        )
        let body = #"{"receipt-data":"\#(Base64.encode(receipt))","password":"secret-1"}"#
        let response = await fixture.simulator.receipts.verifyReceipt(
            body: Array(body.utf8),
            isPOST: true,
            environment: .sandbox
        )
        let pending = try #require(response.pendingRenewalInfo?.first)
        #expect(pending.autoRenewStatus == AutoRenewStatus(rawValue: 0) && pending.expirationIntent == nil)

        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
        state = try await subscription(fixture, original)
        #expect(state.status == AppStoreSubscriptionStatus.expired.rawValue && state.expirationIntent == 1)
    }

    @Test(arguments: TestDatabase.all) func billingRetryEndsInExpiry(_ database: TestDatabase) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        let original = try #require(try await fixture.buy("premium.monthly").transactionId)
        _ = try await fixture.simulator.appStoreConnect.updateAccount(
            id: fixture.account.id,
            AccountInput(paymentFailure: 0)
        )
        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
        #expect(try await subscription(fixture, original).status == AppStoreSubscriptionStatus.billingRetry.rawValue)
        // 60 days of retry = 600 seconds.
        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 601)
        let state = try await subscription(fixture, original)
        #expect(state.status == AppStoreSubscriptionStatus.expired.rawValue && state.expirationIntent == 2)
        #expect(try await fixture.notificationKinds().suffix(2) == ["DID_FAIL_TO_RENEW", "EXPIRED/BILLING_RETRY"])
    }

    @Test(arguments: TestDatabase.all) func turningAutoRenewOffLetsItExpireAndBuyingAgainResubscribes(
        _ database: TestDatabase
    ) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        let original = try #require(try await fixture.buy("premium.monthly").transactionId)
        _ = try await fixture.simulator.subscriptions.setAutoRenew(originalTransactionId: original, enabled: false)
        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
        #expect(try await subscription(fixture, original).status == AppStoreSubscriptionStatus.expired.rawValue)
        let again = try await fixture.buy("premium.monthly")
        #expect(again.originalTransactionId == original && again.transactionId != original)
        #expect(
            try await fixture.notificationKinds() == [
                "SUBSCRIBED/INITIAL_BUY", "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED", "EXPIRED/VOLUNTARY",
                "SUBSCRIBED/RESUBSCRIBE",
            ]
        )
    }

    @Test(arguments: TestDatabase.all) func upgradesApplyNowAndDowngradesAtTheNextRenewal(_ database: TestDatabase)
        async throws
    {
        let fixture = try await SimulatorFixture.make(database: database)
        let monthly = try await fixture.buy("premium.monthly")
        let original = try #require(monthly.transactionId)
        // Upgrade to a higher level: immediate, the current period is cancelled.
        let upgrade = try await fixture.buy("premium.plus.monthly")
        #expect(upgrade.originalTransactionId == original && upgrade.transactionId != original)
        let replaced = try #require(
            try await fixture.simulator.store.purchases.transaction(id: original, on: fixture.simulator.store.sql)
        )
        #expect(replaced.isUpgraded && replaced.revocationDate != nil)
        #expect(try await subscription(fixture, original).productId == "premium.plus.monthly")
        // Downgrade to a lower level: at the next renewal.
        let downgrade = try await fixture.buy("basic.monthly")
        #expect(downgrade.transactionId == upgrade.transactionId)
        var state = try await subscription(fixture, original)
        #expect(state.productId == "premium.plus.monthly" && state.autoRenewProductId == "basic.monthly")
        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
        state = try await subscription(fixture, original)
        #expect(state.productId == "basic.monthly")
        // A crossgrade to another duration also waits for the renewal.
        _ = try await fixture.buy("premium.yearly")
        #expect(try await subscription(fixture, original).autoRenewProductId == "premium.yearly")
        let kinds = try await fixture.notificationKinds()
        #expect(
            kinds.contains("DID_CHANGE_RENEWAL_PREF/UPGRADE") && kinds.contains("DID_CHANGE_RENEWAL_PREF/DOWNGRADE")
        )
    }

    @Test(arguments: TestDatabase.all) func aRefundRevokesTheSubscriptionAndAFamilyCopyCanBeRevoked(
        _ database: TestDatabase
    ) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        let original = try #require(try await fixture.buy("premium.monthly").transactionId)
        let refunded = try await fixture.simulator.subscriptions.refund(transactionId: original, reason: 1)
        #expect(refunded.revocationReason == 1 && refunded.revocationDate != nil)
        #expect(try await subscription(fixture, original).status == AppStoreSubscriptionStatus.revoked.rawValue)
        await #expect {
            try await fixture.simulator.subscriptions.refund(transactionId: original, reason: 0)
        } throws: { $0 is any Refusal }

        _ = try await fixture.simulator.appStoreConnect.updateProduct(
            appAppleId: fixture.app.appAppleId,
            productId: "pro",
            ProductInput(familyShareable: true)
        )
        _ = try await fixture.simulator.appStoreConnect.updateAccount(
            id: fixture.account.id,
            AccountInput(familyId: "family-1")
        )
        let child = try await fixture.simulator.appStoreConnect.createAccount(
            AccountInput(environment: "Sandbox", familyId: "family-1")
        )
        _ = try await fixture.buy("pro")
        let shared = try #require(
            try await fixture.simulator.store.purchases.transactions(
                accountId: child.id,
                appAppleId: fixture.app.appAppleId,
                environment: .sandbox,
                on: fixture.simulator.store.sql
            ).first
        )
        #expect(shared.ownership == .familyShared)
        let revoked = try await fixture.simulator.subscriptions.revokeFamilyShared(transactionId: shared.transactionId)
        #expect(revoked.revocationType == "FAMILY_REVOKE")
        #expect(try await fixture.notificationKinds().contains("REVOKE"))
    }
}
