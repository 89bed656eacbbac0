import Foundation
import Testing
import TillCore
import TillFormats
import TillHTTPKit
import TillTestSupport

@testable import TillSimulator

/// The notification types Apple added since 2023, each triggered as Apple triggers it: price increases and the
/// customer's consent, prorated refunds and their reversal, renewal-date extensions and their limits, consent
/// withdrawn by a parent, external purchase tokens, and the Advanced Commerce notifications.
@Suite(.sharingTheMachine)
struct NotificationTypeTriggerTests {
    func subscription(_ fixture: SimulatorFixture, _ original: String) async throws -> SimSubscription {
        try #require(
            try await fixture.simulator.store.subscriptions.subscription(
                originalTransactionId: original,
                on: fixture.simulator.store.sql
            )
        )
    }

    @Test(arguments: TestDatabase.all) func aPriceIncreaseNeedsConsentOrExpiresAndASmallOneIsOnlyNotified(
        _ database: TestDatabase
    ) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        let simulator = fixture.simulator
        let declining = try #require(try await fixture.buy("premium.monthly").transactionId)
        let other = try await simulator.appStoreConnect.createAccount(AccountInput(environment: "Sandbox"))
        let otherPhone = try await simulator.appStoreConnect.createDevice(accountId: other.id, DeviceInput(name: "p"))
        let accepting = try #require(try await fixture.buy("premium.monthly", on: otherPhone).transactionId)

        let increase = try await simulator.subscriptions.increasePrice(
            appAppleId: fixture.app.appAppleId,
            productId: "premium.monthly",
            PriceIncreaseInput(price: 9990)
        )
        #expect(increase.requiresConsent && Set(increase.subscriptions) == [declining, accepting])
        #expect(try await subscription(fixture, declining).priceIncreaseStatus == 0)
        _ = try await simulator.subscriptions.respondToPriceIncrease(originalTransactionId: accepting, accept: true)
        await #expect {
            _ = try await simulator.subscriptions.respondToPriceIncrease(originalTransactionId: accepting, accept: true)
        } throws: { $0 is any Refusal }
        _ = try await simulator.subscriptions.advanceClock(seconds: 301)
        let expired = try await subscription(fixture, declining)
        #expect(expired.status == AppStoreSubscriptionStatus.expired.rawValue && expired.expirationIntent == 3)
        let renewed = try await subscription(fixture, accepting)
        let renewal = try #require(
            try await simulator.store.purchases.transaction(id: renewed.lastTransactionId, on: simulator.store.sql)
        )
        #expect(renewed.status == AppStoreSubscriptionStatus.active.rawValue && renewal.price == 9990)

        // A small increase needs no consent: ACCEPTED at once, charged at the next renewal.
        let small = try await simulator.subscriptions.increasePrice(
            appAppleId: fixture.app.appAppleId,
            productId: "premium.monthly",
            PriceIncreaseInput(price: 10990)
        )
        #expect(!small.requiresConsent && small.subscriptions == [accepting])
        _ = try await simulator.subscriptions.advanceClock(seconds: 300)
        let next = try await subscription(fixture, accepting)
        let charged = try #require(
            try await simulator.store.purchases.transaction(id: next.lastTransactionId, on: simulator.store.sql)
        )
        #expect(charged.price == 10990)
        let kinds = try await fixture.notificationKinds()
        #expect(kinds.filter { $0 == "PRICE_INCREASE/PENDING" }.count == 2)
        #expect(kinds.filter { $0 == "PRICE_INCREASE/ACCEPTED" }.count == 2)
        #expect(kinds.contains("EXPIRED/PRICE_INCREASE"))
    }

    @Test(arguments: TestDatabase.all) func aProratedRefundIsReversedAndTheSubscriptionComesBack(
        _ database: TestDatabase
    ) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        let simulator = fixture.simulator
        let original = try #require(try await fixture.buy("premium.monthly").transactionId)
        let refunded = try await simulator.subscriptions.refund(transactionId: original, reason: 1, percentage: 40_000)
        #expect(refunded.revocationType == "REFUND_PRORATED" && refunded.revocationPercentage == 40_000)
        let signed = try simulator.receipts.signTransaction(refunded, app: fixture.app)
        guard case .valid(let decoded) = await fixture.jwsVerifier.verify(signed, as: JWSTransactionDecodedPayload.self)
        else { throw Failure("the refunded transaction does not verify") }
        #expect(decoded.payload.revocationType == .refundProrated && decoded.payload.revocationPercentage == 40_000)
        #expect(try await subscription(fixture, original).status == AppStoreSubscriptionStatus.revoked.rawValue)
        await #expect {
            _ = try await simulator.subscriptions.refund(transactionId: original, reason: 0, percentage: 100_001)
        } throws: { $0 is any Refusal }

        let reversed = try await simulator.subscriptions.reverseRefund(transactionId: original)
        #expect(reversed.revocationDate == nil && reversed.revocationPercentage == nil)
        let state = try await subscription(fixture, original)
        #expect(state.status == AppStoreSubscriptionStatus.active.rawValue && state.autoRenewStatus)
        await #expect { _ = try await simulator.subscriptions.reverseRefund(transactionId: original) } throws: {
            $0 is any Refusal
        }
        let kinds = try await fixture.notificationKinds()
        #expect(kinds.filter { $0 == "REFUND" || $0 == "REFUND_REVERSED" }.count == 2 && kinds.count == 3)
    }

    @Test(arguments: TestDatabase.all) func extensionsAreLimitedToActiveSubscriptionsTwiceAYear(
        _ database: TestDatabase
    ) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        let simulator = fixture.simulator
        let original = try #require(try await fixture.buy("premium.monthly").transactionId)
        let before = try await subscription(fixture, original).expiresDate
        func extend(_ id: String = UUID().uuidString) async throws -> Result<
            SimRenewalExtension, SubscriptionEngine.ExtensionRefusal
        > {
            try await simulator.subscriptions.extendRenewalDate(
                originalTransactionId: original,
                app: fixture.app,
                environment: .sandbox,
                days: 30,
                reason: 1,
                requestIdentifier: id
            )
        }
        let first = try await extend("first")
        #expect(try first.get().effectiveDate == before + 300_000)
        #expect(try await extend("first").get() == first.get())  // the same request: nothing extended twice
        _ = try await extend()
        #expect(try await extend() == .failure(.maximumReached))
        #expect(try await subscription(fixture, original).expiresDate == before + 600_000)

        _ = try await simulator.appStoreConnect.updateAccount(id: fixture.account.id, AccountInput(paymentFailure: 0))
        _ = try await simulator.subscriptions.advanceClock(seconds: 901)
        #expect(try await subscription(fixture, original).status == AppStoreSubscriptionStatus.billingRetry.rawValue)
        let retrying = try await simulator.subscriptions.extendRenewalDate(
            originalTransactionId: original,
            app: fixture.app,
            environment: .sandbox,
            days: 1,
            reason: 0,
            requestIdentifier: "later"
        )
        #expect(retrying == .failure(.ineligible))
        #expect(try await fixture.notificationKinds().filter { $0 == "RENEWAL_EXTENDED" }.count == 2)
    }

    @Test func consentWithdrawnExternalTokensAndAdvancedCommerceEachSendTheirNotification() async throws {
        let fixture = try await SimulatorFixture.make()
        let simulator = fixture.simulator
        let original = try #require(try await fixture.buy("premium.monthly").transactionId)
        _ = try await simulator.events.rescindConsent(
            accountId: fixture.account.id,
            bundleId: SimulatorFixture.bundleId
        )
        let token = try await simulator.events.externalPurchaseToken(
            appAppleId: fixture.app.appAppleId,
            ExternalPurchaseTokenInput(subtype: "CREATED", tokenType: "SERVICES")
        )
        #expect(token.externalPurchaseId?.hasPrefix("SANDBOX_") == true && token.tokenExpirationDate != nil)
        await #expect {
            _ = try await simulator.events.externalPurchaseToken(
                appAppleId: fixture.app.appAppleId,
                ExternalPurchaseTokenInput(subtype: "CREATED")
            )
        } throws: { $0 is any Refusal }
        for event in AdvancedCommerceEvent.allCases {
            _ = try await simulator.events.advancedCommerce(event, originalTransactionId: original)
        }
        let log = try await simulator.store.notifications.notifications(
            appAppleId: fixture.app.appAppleId,
            environment: .sandbox,
            from: 0,
            to: .max,
            on: simulator.store.sql
        )
        let rescinded = try #require(log.first { $0.notificationType == "RESCIND_CONSENT" })
        guard
            case .valid(let payload) = await fixture.jwsVerifier.verify(
                rescinded.signedPayload,
                as: ResponseBodyV2DecodedPayload.self
            )
        else { throw Failure("RESCIND_CONSENT does not verify") }
        #expect(payload.payload.data == nil && payload.payload.appData?.signedAppTransactionInfo != nil)
        // Sent within a millisecond of each other, so compared as a set.
        let kinds = try await fixture.notificationKinds()
        #expect(
            Set(kinds).isSuperset(of: [
                "RESCIND_CONSENT", "EXTERNAL_PURCHASE_TOKEN/CREATED", "METADATA_UPDATE", "MIGRATION", "PRICE_CHANGE",
            ])
        )
        #expect(kinds.count == 6)
    }
}
