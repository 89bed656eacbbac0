import Crypto
import Foundation
import Testing
import TillClient
import TillCore
import TillFormats
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// Offers through the app's ``Storefront``: the lookup shows a subscription's offers and the customer's
/// eligibility, and a payment carries a promotional offer signed by the developer's key, as `SKPaymentDiscount` and
/// StoreKit 2's purchase options do.
struct StorefrontOfferTests {
    @Test func aPaymentCarriesASignedPromotionalOfferAndTheLookupShowsEligibility() async throws {
        try await ClientFixture.run { fixture in
            let app = fixture.simulator.offers
            _ = try await app.createOffer(
                appAppleId: 1_234_567_890,
                productId: "premium.monthly",
                OfferInput(kind: .introductory, discountType: .freeTrial, duration: "P1W")
            )
            _ = try await app.createOffer(
                appAppleId: 1_234_567_890,
                productId: "premium.monthly",
                OfferInput(kind: .promotional, offerIdentifier: "loyal", discountType: .payUpFront, duration: "P3M",
                           price: 1990)
            )
            let store = fixture.storefront()
            let before = try #require(try await store.products(["premium.monthly"]).products.first)
            #expect(before.introductoryOffer?.paymentMode == "FREE_TRIAL" && before.isEligibleForIntroOffer == true)
            #expect(before.promotionalOffers?.map(\.id) == ["loyal"])
            let trial = try await store.purchase(Payment(productId: "premium.monthly"))
            #expect(trial.state == "purchased")
            let after = try #require(try await store.products(["premium.monthly"]).products.first)
            #expect(after.isEligibleForIntroOffer == false)

            // The developer's server signs the offer (Apple's original format) with the app's key.
            let keyId = try #require(fixture.app.apiKeyId)
            let key = try P256.Signing.PrivateKey(pemRepresentation: try #require(fixture.app.apiPrivateKey))
            let nonce = UUID().uuidString.lowercased()
            let timestamp = Int64(Date().timeIntervalSince1970 * 1000)
            let fields = [ClientFixture.bundleId, keyId, "premium.monthly", "loyal", "", nonce, String(timestamp)]
            let signature = try key.signature(for: Data(fields.joined(separator: "\u{2063}").utf8))
            let offer = PromotionalOffer(
                offerIdentifier: "loyal",
                keyIdentifier: keyId,
                nonce: nonce,
                timestamp: timestamp,
                signature: signature.derRepresentation.base64EncodedString()
            )
            let redeemed = try await store.purchase(Payment(productId: "premium.monthly", promotionalOffer: offer))
            #expect(redeemed.state == "purchased")
            let original = try #require(trial.originalTransactionId ?? trial.transactionId)
            let subscription = try #require(
                try await fixture.simulator.store.subscription(
                    originalTransactionId: original,
                    on: fixture.simulator.store.sql
                )
            )
            #expect(subscription.appliedOffer?.identifier == "loyal")
            let replayed = try await store.purchase(Payment(productId: "premium.monthly", promotionalOffer: offer))
            #expect(replayed.state == "failed" && replayed.error?.code == .invalidSignature)
        }
    }
}
