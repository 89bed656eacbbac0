import Crypto
import Foundation
import Testing
import TillClient
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// Offers through the app's ``TillStorefront``: the lookup shows a subscription's offers and the customer's
/// eligibility, and a payment carries a promotional offer signed by the developer's key, as `SKPaymentDiscount` and
/// StoreKit 2's purchase options do.
@Suite(.sharingTheMachine)
struct StorefrontOfferTests {
    @Test func aPaymentCarriesASignedPromotionalOfferAndTheLookupShowsEligibility() async throws {
        try await ClientFixture.run { fixture in
            let app = fixture.simulator.offers
            _ = try await app.createOffer(
                appAppleId: 1_234_567_890,
                productId: "premium.monthly",
                OfferInput(kind: .introductory, discountType: .freeTrial, duration: "P1W")
            )
            try await fixture.createLoyalOfferInTheStore()
            let store = fixture.storefront()
            let before = try #require(try await store.products(["premium.monthly"]).products.first?.subscription)
            let trialOffer = try #require(before.introductoryOffer)
            #expect(trialOffer.paymentMode == .freeTrial && trialOffer.type == .introductory && trialOffer.price == 0)
            #expect(trialOffer.period == StoreSubscriptionPeriod(value: 1, unit: .week) && trialOffer.periodCount == 1)
            #expect(before.isEligibleForIntroOffer == true)
            #expect(before.promotionalOffers.map(\.id) == ["loyal"])
            #expect(before.promotionalOffers.first?.paymentMode == .payUpFront)
            #expect(before.promotionalOffers.first?.period == StoreSubscriptionPeriod(iso8601: "P3M"))
            let trial = try await fixture.buy("premium.monthly")
            #expect(trial.state == .purchased && trial.productType == .autoRenewable && trial.expirationDate != nil)
            let after = try #require(try await store.products(["premium.monthly"]).products.first)
            #expect(after.subscription?.isEligibleForIntroOffer == false)

            // The developer's server signs the offer (Apple's original format) with the app's key.
            let keyId = try #require(fixture.app.apiKeyId)
            let key = try P256.Signing.PrivateKey(pemRepresentation: try #require(fixture.app.apiPrivateKey))
            let nonce = UUID()
            let timestamp = Int64(Date().timeIntervalSince1970 * 1000)
            let fields = [
                ClientFixture.bundleId, keyId, "premium.monthly", "loyal", "", nonce.uuidString.lowercased(),
                String(timestamp),
            ]
            let signature = try key.signature(for: Data(fields.joined(separator: "\u{2063}").utf8))
            let offer = PromotionalOffer(
                offerIdentifier: "loyal",
                keyIdentifier: keyId,
                nonce: nonce,
                timestamp: timestamp,
                signature: signature.derRepresentation.base64EncodedString()
            )
            let redeemed = try await store.purchase(Payment(productId: "premium.monthly", promotionalOffer: offer))
            guard case .success(.verified) = redeemed else {
                Issue.record("expected purchased, got \(redeemed)")
                return
            }
            let original = trial.originalTransactionId
            let subscription = try #require(
                try await fixture.simulator.store.subscriptions.subscription(
                    originalTransactionId: original,
                    on: fixture.simulator.store.sql
                )
            )
            #expect(subscription.appliedOffer?.identifier == "loyal")
            // A signature is spent by the payment that used it: StoreKit 1's code 12, StoreKit 2's
            // invalidOfferSignature.
            await #expect {
                _ = try await store.purchase(Payment(productId: "premium.monthly", promotionalOffer: offer))
            } throws: { error in
                (error as? StoreError)?.code == .invalidOfferSignature
            }
        }
    }
}

extension StorefrontOfferTests {
    /// The whole app flow: a subscriber asks Till to sign a promotional offer (both formats), and the store takes
    /// the signature with the payment; the consent to share consumption data is recorded on the way.
    @Test func theAppBuysWithAnOfferTheServerSigned() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.offerLoyal()
            try await fixture.serve { url in
                let server = fixture.client(url)
                let store = fixture.storefront()
                let first = try await fixture.buy("premium.monthly")
                let jws = try #require(first.signedTransaction)
                _ = try await server.submit(.signedTransaction(jws), customerId: "alice", wait: 10)
                try await server.setConsumptionConsent(customerId: "alice", consented: true)
                for jws in [false, true] {
                    let signed = try await server.signPromotionalOffer(
                        customerId: "alice",
                        productId: "premium.monthly",
                        offerIdentifier: "loyal",
                        jws: jws
                    )
                    let offer = try #require(signed.promotionalOffer)
                    let bought = try await store.purchase(
                        Payment(productId: "premium.monthly", promotionalOffer: offer)
                    )
                    guard case .success(.verified) = bought else {
                        Issue.record("jws \(jws): expected purchased, got \(bought)")
                        continue
                    }
                }
                await #expect(throws: TillClientError.self) {
                    _ = try await server.signPromotionalOffer(
                        customerId: "alice",
                        productId: "premium.monthly",
                        offerIdentifier: "unknown"
                    )
                }
            }
        }
    }
}
