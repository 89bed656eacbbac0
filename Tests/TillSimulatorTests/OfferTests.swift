import Foundation
import JWTKit
import Testing
import TillCore
import TillFormats
import TillHTTPKit
import TillTestSupport

@testable import TillSimulator

/// Offers as the App Store applies them: introductory offers once per group, offer codes, win-back offers, and
/// what every format says of them.
@Suite(.sharingTheMachine)
struct OfferTests {
    func transactions(_ fixture: SimulatorFixture, _ original: String) async throws -> [SimTransaction] {
        try await fixture.simulator.store.purchases.transactions(originalTransactionId: original, on: fixture.simulator.store.sql)
    }

    func offer(_ fixture: SimulatorFixture, _ product: String, _ input: OfferInput) async throws -> SimOffer {
        try await fixture.simulator.offers.createOffer(appAppleId: fixture.app.appAppleId, productId: product, input)
    }

    @Test(arguments: TestDatabase.all) func aPayAsYouGoIntroductoryOfferCoversItsPeriodsThenTheFullPriceOnce(
        _ database: TestDatabase
    ) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        _ = try await offer(fixture, "premium.monthly", OfferInput(
            kind: .introductory, discountType: .payAsYouGo, periods: 3, price: 190
        ))
        let lookup = try await fixture.simulator.payments.lookUpProducts(
            bundleId: SimulatorFixture.bundleId, productIds: ["premium.monthly"], storefront: "USA",
            environment: .sandbox, account: fixture.account
        )
        #expect(lookup.products.first?.isEligibleForIntroOffer == true)
        #expect(lookup.products.first?.introductoryOffer?.periodCount == 3)
        let original = try #require(try await fixture.buy("premium.monthly").transactionId)
        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 3 * 300 + 1)
        let periods = try await transactions(fixture, original)
        #expect(periods.count == 4)
        #expect(periods.map(\.offerType) == [1, 1, 1, nil])
        #expect(periods.map(\.price) == [190, 190, 190, 990])
        #expect(periods.prefix(3).allSatisfy { $0.offerPeriod == "P3M" && $0.isInIntroOfferPeriod && !$0.isTrial })
        let receipt = try await fixture.receipt()
        let byDate = receipt.inAppPurchases.sorted { ($0.purchaseDate ?? .distantPast) < ($1.purchaseDate ?? .distantPast) }
        #expect(byDate.map(\.isInIntroOfferPeriod) == [true, true, true, false])

        // Once per group: after expiry, buying again gets no introductory offer.
        _ = try await fixture.simulator.subscriptions.setAutoRenew(originalTransactionId: original, enabled: false)
        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
        let againId = try #require(try await fixture.buy("premium.yearly").transactionId)
        let resubscribed = try #require(
            try await fixture.simulator.store.purchases.transaction(id: againId, on: fixture.simulator.store.sql)
        )
        #expect(resubscribed.offerType == nil && resubscribed.price == 9990)
        let after = try await fixture.simulator.payments.lookUpProducts(
            bundleId: SimulatorFixture.bundleId, productIds: ["premium.monthly"], storefront: "USA",
            environment: .sandbox, account: fixture.account
        )
        #expect(after.products.first?.isEligibleForIntroOffer == false)
    }

    @Test(arguments: TestDatabase.all) func offerCodesSubscribeOrWaitForTheNextRenewalAndAreSpentOnce(
        _ database: TestDatabase
    ) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        _ = try await offer(fixture, "premium.monthly", OfferInput(
            kind: .offerCode, offerIdentifier: "SPRING-2026", discountType: .freeTrial, duration: "P1M"
        ))
        _ = try await offer(fixture, "premium.monthly", OfferInput(
            kind: .offerCode, offerIdentifier: "PODCAST", discountType: .payUpFront, duration: "P3M", price: 1990,
            customCode: "listen", redemptionLimit: 1
        ))
        _ = try await offer(fixture, "gems.100", OfferInput(
            kind: .offerCode, offerIdentifier: "HALF", discountType: .oneTime, price: 490
        ))
        let codes = try await fixture.simulator.offers.generateCodes(
            appAppleId: fixture.app.appAppleId, productId: "premium.monthly", offerIdentifier: "SPRING-2026", count: 2
        )
        let redeem = { (code: String) in
            try await fixture.simulator.payments.redeemOfferCode(
                code, deviceId: fixture.phone.id, bundleId: SimulatorFixture.bundleId, environment: .sandbox
            )
        }
        let first = try await redeem(codes[0])
        let original = try #require(first.transactionId)
        let subscribed = try #require(try await transactions(fixture, original).first)
        #expect(subscribed.offerType == 3 && subscribed.offerIdentifier == "SPRING-2026" && subscribed.price == 0)
        await #expect { _ = try await redeem(codes[0]) } throws: { $0 is any Refusal }

        // A custom code during the free period: it applies at the next renewal, pay up front for three months.
        _ = try await redeem("LISTEN")
        let pending = try #require(
            try await fixture.simulator.store.subscriptions.subscription(originalTransactionId: original, on: fixture.simulator.store.sql)
        ).appliedOffer
        #expect(pending?.identifier == "PODCAST" && pending?.price == 1990)
        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
        let renewal = try #require(try await transactions(fixture, original).last)
        #expect(renewal.offerType == 3 && renewal.offerIdentifier == "PODCAST" && renewal.price == 1990)
        #expect(renewal.expiresDate! - renewal.purchaseDate == 3 * 300_000)
        let other = try await fixture.simulator.appStoreConnect.createAccount(AccountInput(environment: "Sandbox"))
        let otherPhone = try await fixture.simulator.appStoreConnect.createDevice(accountId: other.id, DeviceInput(name: "p"))
        await #expect {
            _ = try await fixture.simulator.payments.redeemOfferCode(
                "listen", deviceId: otherPhone.id, bundleId: SimulatorFixture.bundleId, environment: .sandbox
            )
        } throws: { $0 is any Refusal }

        // A one-time product's code: the discounted price, ONE_TIME, ONE_TIME_CHARGE.
        let gems = try await fixture.simulator.offers.generateCodes(
            appAppleId: fixture.app.appAppleId, productId: "gems.100", offerIdentifier: "HALF", count: 1
        )
        let boughtId = try #require(try await redeem(gems[0]).transactionId)
        let charge = try #require(
            try await fixture.simulator.store.purchases.transaction(id: boughtId, on: fixture.simulator.store.sql)
        )
        #expect(charge.price == 490 && charge.offerDiscountType == "ONE_TIME" && charge.offerPeriod == nil)
        let kinds = try await fixture.notificationKinds()
        #expect(kinds.first == "SUBSCRIBED/INITIAL_BUY")
        #expect(kinds.contains("OFFER_REDEEMED"))
        #expect(kinds.last == "ONE_TIME_CHARGE")
    }

    @Test(arguments: TestDatabase.all) func aLapsedSubscriberIsOfferedWinBackOffersAndResubscribesWithOne(
        _ database: TestDatabase
    ) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        _ = try await offer(fixture, "premium.monthly", OfferInput(
            kind: .winBack, offerIdentifier: "comeback", discountType: .payAsYouGo, periods: 2, price: 490,
            minimumPaidDays: 1, minimumDaysSinceExpiry: 0, maximumDaysSinceExpiry: 60
        ))
        let original = try #require(try await fixture.buy("premium.monthly").transactionId)
        let refused = try await fixture.simulator.payments.addPayment(
            PaymentRequest(deviceId: fixture.phone.id, bundleId: SimulatorFixture.bundleId, productId: "premium.monthly",
                           winBackOfferId: "comeback"),
            environment: .sandbox
        )
        #expect(refused.state == .failed && refused.error?.code == StoreKitErrorCode.ineligibleForOffer.rawValue)
        _ = try await fixture.simulator.subscriptions.setAutoRenew(originalTransactionId: original, enabled: false)
        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
        let renewal = try await fixture.simulator.payments.signedRenewalInfo(
            deviceId: fixture.phone.id, originalTransactionId: original, environment: .sandbox
        )
        guard case .valid(let info) = await fixture.jwsVerifier.verify(renewal, as: JWSRenewalInfoDecodedPayload.self)
        else { throw Failure("renewal info does not verify") }
        #expect(info.payload.eligibleWinBackOfferIds == ["comeback"])
        let back = try await fixture.simulator.payments.addPayment(
            PaymentRequest(deviceId: fixture.phone.id, bundleId: SimulatorFixture.bundleId, productId: "premium.monthly",
                           winBackOfferId: "comeback"),
            environment: .sandbox
        )
        let resubscribed = try #require(try await transactions(fixture, original).last)
        #expect(back.state == .purchased && resubscribed.offerType == 4 && resubscribed.offerIdentifier == "comeback")
        #expect(try await fixture.notificationKinds().last == "SUBSCRIBED/RESUBSCRIBE")
    }

    @Test func aSignedRequestWithAnExpiryIsRefusedAndAnOfferMustBeOneAppStoreConnectTakes() async throws {
        let fixture = try await SimulatorFixture.make()
        _ = try await offer(fixture, "premium.monthly", OfferInput(
            kind: .promotional, offerIdentifier: "loyal", discountType: .freeTrial, duration: "P1W"
        ))
        await #expect {
            _ = try await offer(fixture, "gems.100", OfferInput(kind: .introductory, discountType: .freeTrial, duration: "P1W"))
        } throws: { $0 is any Refusal }
        await #expect {
            _ = try await offer(fixture, "premium.monthly", OfferInput(kind: .promotional, offerIdentifier: "loyal",
                                                                     discountType: .freeTrial, duration: "P1W"))
        } throws: { $0 is any Refusal }
        await #expect {
            _ = try await offer(fixture, "premium.monthly", OfferInput(kind: .introductory, discountType: .payUpFront,
                                                                     duration: "P3D", price: 100))
        } throws: { $0 is any Refusal }
        _ = try await fixture.buy("premium.monthly")
        let key = try await fixture.simulator.appStoreConnect.createAPIKey(appAppleId: fixture.app.appAppleId)
        struct Claims: JWTPayload {
            var iss: IssuerClaim, iat: IssuedAtClaim, exp: ExpirationClaim, aud: AudienceClaim
            var bid: String, nonce: String, productId: String, offerIdentifier: String
            func verify(using algorithm: some JWTAlgorithm) async throws {}
        }
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(pem: key.privateKey), kid: JWKIdentifier(string: key.keyId))
        let now = Date()
        let jws = try await keys.sign(
            Claims(iss: .init(value: key.issuerId), iat: .init(value: now), exp: .init(value: now + 600),
                   aud: .init(value: ["promotional-offer"]), bid: SimulatorFixture.bundleId,
                   nonce: UUID().uuidString.lowercased(), productId: "premium.monthly", offerIdentifier: "loyal"),
            kid: JWKIdentifier(string: key.keyId)
        )
        let answer = try await fixture.simulator.payments.addPayment(
            PaymentRequest(deviceId: fixture.phone.id, bundleId: SimulatorFixture.bundleId, productId: "premium.monthly",
                           promotionalOffer: PromotionalOfferInput(offerIdentifier: "loyal", compactJWS: jws)),
            environment: .sandbox
        )
        #expect(answer.state == .failed && answer.error?.code == StoreKitErrorCode.invalidSignature.rawValue)
    }

    @Test func verifyReceiptNamesTheOffers() async throws {
        let fixture = try await SimulatorFixture.make()
        _ = try await offer(fixture, "premium.monthly", OfferInput(
            kind: .introductory, discountType: .freeTrial, duration: "P1W"
        ))
        _ = try await offer(fixture, "premium.monthly", OfferInput(
            kind: .offerCode, offerIdentifier: "FRIENDS", discountType: .payUpFront, duration: "P1M", price: 100,
            customCode: "FRIENDS"
        ))
        _ = try await fixture.buy("premium.monthly")
        _ = try await fixture.simulator.payments.redeemOfferCode(
            "friends", deviceId: fixture.phone.id, bundleId: SimulatorFixture.bundleId, environment: .sandbox
        )
        let der = try await fixture.simulator.payments.appReceipt(
            deviceId: fixture.phone.id, bundleId: SimulatorFixture.bundleId, environment: .sandbox
        )
        let body = try JSONSerialization.data(withJSONObject: ["receipt-data": Base64.encode(der), "password": "secret-1"])
        let response = await fixture.simulator.receipts.verifyReceipt(body: Array(body), isPOST: true, environment: .sandbox)
        let trial = try #require(response.latestReceiptInfo?.first)
        #expect(trial.isTrialPeriod == true && trial.isInIntroOfferPeriod == false)
        let pending = try #require(response.pendingRenewalInfo?.first)
        #expect(pending.offerCodeRefName == "FRIENDS")
    }
}

struct Failure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
