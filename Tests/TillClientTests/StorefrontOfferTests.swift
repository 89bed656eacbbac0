import Crypto
import Foundation
import Testing
import TillClient
import TillContract
import TillCore
import TillFormats
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// Offers through the app's ``Storefront``: the lookup shows a subscription's offers and the customer's
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

extension StorefrontOfferTests {
    /// The whole app flow: a subscriber asks Till to sign a promotional offer (both formats), and the store takes
    /// the signature with the payment; the consent to share consumption data is recorded on the way.
    @Test func theAppBuysWithAnOfferTheServerSigned() async throws {
        try await ClientFixture.run { fixture in
            _ = try await fixture.simulator.offers.createOffer(
                appAppleId: 1_234_567_890,
                productId: "premium.monthly",
                OfferInput(kind: .promotional, offerIdentifier: "loyal", discountType: .payUpFront, duration: "P3M",
                           price: 1990)
            )
            _ = try await fixture.server.offers.putOffer(
                bundleId: ClientFixture.bundleId, productId: "premium.monthly", offerIdentifier: "loyal",
                eligibility: .currentOrLapsedSubscribers
            )
            try await fixture.serve { url in
                let server = fixture.client(url)
                let store = fixture.storefront()
                let first = try await store.purchase(Payment(productId: "premium.monthly"))
                let jws = try #require(first.signedTransaction)
                _ = try await server.submit(.signedTransaction(jws), customerId: "alice", wait: .seconds(10))
                try await server.setConsumptionConsent(customerId: "alice", consented: true)
                for jws in [false, true] {
                    let signed = try await server.signPromotionalOffer(
                        customerId: "alice", productId: "premium.monthly", offerIdentifier: "loyal", jws: jws
                    )
                    let offer = try #require(signed.promotionalOffer)
                    let bought = try await store.purchase(Payment(productId: "premium.monthly", promotionalOffer: offer))
                    #expect(bought.state == "purchased", "jws: \(jws)")
                }
                await #expect(throws: TillClientError.self) {
                    _ = try await server.signPromotionalOffer(
                        customerId: "alice", productId: "premium.monthly", offerIdentifier: "unknown"
                    )
                }
            }
        }
    }
}
