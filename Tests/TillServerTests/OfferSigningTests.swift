import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
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

/// Offers signed by the server for apps (docs/offers.md), judged by the simulator's App Store, which checks them as
/// Apple does against the keys registered in its App Store Connect: the server's signatures buy the offers, tampered
/// or replayed ones are refused, and the server signs nothing its catalogue does not have.
@Suite(.sharingTheMachine)
struct OfferSigningTests {
    static let bundle = ServerFixture.bundleId

    /// The fixture's catalogue and the simulator's, with `premium.plus` (an upgrade in the `premium` group), its
    /// promotional offer `loyal` in App Store Connect, and `premium.monthly`'s one-week free trial.
    func prepare(_ fixture: ServerFixture) async throws {
        let app = try #require(fixture.app.appAppleId)
        _ = try await fixture.simulator.appStoreConnect.createProduct(
            appAppleId: app,
            ProductInput(
                productId: "premium.plus",
                type: .autoRenewable,
                subscriptionGroup: "premium",
                subscriptionPeriod: .oneMonth,
                price: 1990
            )
        )
        _ = try await fixture.server.catalogue.putProduct(
            bundleId: Self.bundle,
            productId: "premium.plus",
            CatalogProductInput(type: .autoRenewable, entitlements: ["premium"], subscriptionGroup: "premium")
        )
        _ = try await fixture.simulator.offers.createOffer(
            appAppleId: app,
            productId: "premium.plus",
            OfferInput(kind: .promotional, offerIdentifier: "loyal", discountType: .payAsYouGo, periods: 2, price: 990)
        )
        _ = try await fixture.simulator.offers.createOffer(
            appAppleId: app,
            productId: "premium.monthly",
            OfferInput(kind: .introductory, discountType: .freeTrial, duration: "P1W")
        )
    }

    func withRouter(_ fixture: ServerFixture, _ body: @Sendable (any TestClientProtocol) async throws -> Void)
        async throws
    {
        try await Application(router: buildServerRouter(fixture.server)).test(.router, body)
    }

    func pay(
        _ fixture: ServerFixture,
        _ productId: String,
        device: String? = nil,
        token: String? = nil,
        promotional: PromotionalOfferInput? = nil,
        eligibility: String? = nil
    ) async throws -> QueueTransaction {
        try await fixture.simulator.payments.addPayment(
            PaymentRequest(
                deviceId: device ?? fixture.device.id,
                bundleId: Self.bundle,
                productId: productId,
                appAccountToken: token,
                promotionalOffer: promotional,
                introductoryOfferEligibility: eligibility
            ),
            environment: .sandbox
        )
    }

    func submit(_ fixture: ServerFixture, _ purchase: QueueTransaction, as customerId: String) async throws {
        let result = try await fixture.server.intake.submit(
            SubmissionRequest(customerId: customerId, signedTransaction: try #require(purchase.signedTransaction)),
            app: fixture.app
        )
        #expect(try await fixture.settled(result).state == .confirmed)
    }

    func simulated(_ fixture: ServerFixture, _ purchase: QueueTransaction) async throws -> SimTransaction {
        let store = fixture.simulator.store
        let id = try #require(purchase.transactionId)
        return try #require(try await store.purchases.transaction(id: id, on: store.sql))
    }

    /// A StoreKit error code 12 (`invalidSignature`): the App Store refused the offer's signature.
    func refusedSignature(_ purchase: QueueTransaction) -> Bool {
        purchase.state == .failed && purchase.error?.code == 12
    }

    /// Flips one bit of a base64 value's last byte.
    func tampered(_ base64: String) throws -> String {
        var bytes = try #require(Data(base64Encoded: base64))
        bytes[bytes.count - 1] ^= 0x01
        return bytes.base64EncodedString()
    }

    @Test(arguments: TestDatabase.all) func theServersPromotionalOfferSignaturesBuyTheOfferAndNothingElse(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            try await prepare(fixture)
            try await submit(fixture, try await pay(fixture, "premium.monthly"), as: "alice")
            let key = fixture.app.appKey
            try await withRouter(fixture) { client in
                let offerPath = "/admin/v1/apps/\(Self.bundle)/products/premium.plus/offers/loyal"
                let created = try await client.call(
                    .put,
                    offerPath,
                    json: #"{"eligibility":"anyone"}"#,
                    token: "operator"
                )
                #expect(
                    created.status == 201 && created.object["subscriptionGroup"] as? String == "premium",
                    "\(created)"
                )
                let replaced = try await client.call(
                    .put,
                    offerPath,
                    json: #"{"eligibility":"currentOrLapsedSubscribers"}"#,
                    token: "operator"
                )
                #expect(
                    replaced.status == 200 && replaced.object["eligibility"] as? String == "currentOrLapsedSubscribers"
                )
                let listed = try await client.call(
                    .get,
                    "/admin/v1/apps/\(Self.bundle)/products/premium.plus/offers",
                    token: "operator"
                )
                #expect(try listed.decode(Components.Schemas.OfferPage.self).items.map(\.offerIdentifier) == ["loyal"])
                let onGems = try await client.call(
                    .put,
                    "/admin/v1/apps/\(Self.bundle)/products/gems.100/offers/half",
                    json: #"{"eligibility":"anyone"}"#,
                    token: "operator"
                )
                #expect(onGems.status == 400 && onGems.code == "notASubscription")

                let sign = { (customer: String, body: String) in
                    try await client.call(.post, "/v1/customers/\(customer)/offers/promotional", json: body, token: key)
                }
                // The original signature, bound to the purchase's app account token (sent uppercase, signed lowercase).
                let token = UUID().uuidString
                let signed = try await sign(
                    "alice",
                    #"{"productId":"premium.plus","offerIdentifier":"loyal","format":"signature","appAccountToken":"\#(token)"}"#
                )
                #expect(signed.status == 200, "\(signed)")
                let answer = try signed.decode(Components.Schemas.PromotionalOfferSignature.self)
                #expect(answer.keyIdentifier == fixture.app.apiKeyId && answer.appAccountToken == token.lowercased())
                let original = PromotionalOfferInput(
                    offerIdentifier: "loyal",
                    keyIdentifier: answer.keyIdentifier,
                    nonce: answer.nonce,
                    timestamp: answer.timestamp,
                    signature: answer.signature
                )
                let upgrade = try await pay(fixture, "premium.plus", token: token.lowercased(), promotional: original)
                #expect(upgrade.state == .purchased, "\(upgrade)")
                let bought = try await simulated(fixture, upgrade)
                #expect(bought.offerType == 2 && bought.offerIdentifier == "loyal" && bought.price == 990)
                try await submit(fixture, upgrade, as: "alice")
                // Spent once; and a signature changed by one bit, or a purchase with another token, buys nothing.
                #expect(
                    refusedSignature(
                        try await pay(fixture, "premium.plus", token: token.lowercased(), promotional: original)
                    )
                )
                let second = try await sign(
                    "alice",
                    #"{"productId":"premium.plus","offerIdentifier":"loyal","format":"signature","appAccountToken":"\#(token)"}"#
                ).decode(Components.Schemas.PromotionalOfferSignature.self)
                var forged = PromotionalOfferInput(
                    offerIdentifier: "loyal",
                    keyIdentifier: second.keyIdentifier,
                    nonce: second.nonce,
                    timestamp: second.timestamp,
                    signature: try tampered(try #require(second.signature))
                )
                #expect(
                    refusedSignature(
                        try await pay(fixture, "premium.plus", token: token.lowercased(), promotional: forged)
                    )
                )
                forged.signature = second.signature
                #expect(
                    refusedSignature(
                        try await pay(
                            fixture,
                            "premium.plus",
                            token: UUID().uuidString.lowercased(),
                            promotional: forged
                        )
                    )
                )

                // A separate In-App Purchase key signs from now on; the JWS names alice's newest transaction.
                let iapKey = try await fixture.simulator.appStoreConnect.createAPIKey(
                    appAppleId: try #require(fixture.app.appAppleId)
                )
                let patched = try await fixture.server.catalogue.updateApp(
                    bundleId: Self.bundle,
                    ServerAppInput(
                        inAppPurchaseKeyId: iapKey.keyId,
                        inAppPurchaseIssuerId: iapKey.issuerId,
                        inAppPurchasePrivateKey: iapKey.privateKey
                    )
                )
                #expect(AppView(patched).hasInAppPurchaseKey && patched.apiKeyId != iapKey.keyId)
                let jwsAnswer = try await sign(
                    "alice",
                    #"{"productId":"premium.plus","offerIdentifier":"loyal","format":"jws"}"#
                )
                let jws = try jwsAnswer.decode(Components.Schemas.PromotionalOfferSignature.self)
                #expect(
                    jws.keyIdentifier == iapKey.keyId && jws.transactionId == upgrade.transactionId
                        && jws.signature == nil
                )
                let compact = try #require(jws.compactJWS)
                let redeemed = try await pay(
                    fixture,
                    "premium.plus",
                    promotional: PromotionalOfferInput(offerIdentifier: "loyal", compactJWS: compact)
                )
                #expect(redeemed.state == .purchased, "\(redeemed)")
                let subscription = try await fixture.simulator.store.subscriptions.subscription(
                    originalTransactionId: try #require(redeemed.originalTransactionId),
                    on: fixture.simulator.store.sql
                )
                #expect(
                    subscription?.appliedOffer?.identifier == "loyal",
                    "redeemed during a paid period: the next renewal"
                )
                let parts = compact.split(separator: ".").map(String.init)
                let payload = try #require(Base64.decode(parts[1], alphabet: .url))
                var claims = try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
                claims["nonce"] = UUID().uuidString.lowercased()
                let forgedPayload = Base64.encode(try JSONSerialization.data(withJSONObject: claims), alphabet: .url)
                #expect(
                    refusedSignature(
                        try await pay(
                            fixture,
                            "premium.plus",
                            promotional: PromotionalOfferInput(
                                offerIdentifier: "loyal",
                                compactJWS: "\(parts[0]).\(forgedPayload).\(parts[2])"
                            )
                        )
                    )
                )

                // The server signs nothing its catalogue does not have, and only for whom the rule admits.
                let unknownProduct = try await sign(
                    "alice",
                    #"{"productId":"premium.gold","offerIdentifier":"loyal","format":"jws"}"#
                )
                #expect(unknownProduct.status == 404 && unknownProduct.code == "productNotFound")
                let unknownOffer = try await sign(
                    "alice",
                    #"{"productId":"premium.plus","offerIdentifier":"free-year","format":"jws"}"#
                )
                #expect(unknownOffer.status == 404 && unknownOffer.code == "offerNotFound")
                let stranger = try await sign(
                    "nobody",
                    #"{"productId":"premium.plus","offerIdentifier":"loyal","format":"jws"}"#
                )
                #expect(stranger.status == 403 && stranger.code == "notEligible", "\(stranger)")
                let tokenInJWS = try await sign(
                    "alice",
                    #"{"productId":"premium.plus","offerIdentifier":"loyal","format":"jws","appAccountToken":"x"}"#
                )
                #expect(tokenInJWS.status == 400 && tokenInJWS.code == "appAccountTokenWithJWS")
                let badFormat = try await sign(
                    "alice",
                    #"{"productId":"premium.plus","offerIdentifier":"loyal","format":"pem"}"#
                )
                #expect(badFormat.status == 400 && badFormat.code == "invalidBody")
                _ = try await client.call(.put, offerPath, json: #"{"eligibility":"newCustomers"}"#, token: "operator")
                let subscriber = try await sign(
                    "alice",
                    #"{"productId":"premium.plus","offerIdentifier":"loyal","format":"jws"}"#
                )
                #expect(subscriber.status == 403 && subscriber.code == "notEligible")
                #expect(try await client.call(.delete, offerPath, token: "operator").status == 204)
                let deleted = try await sign(
                    "nobody",
                    #"{"productId":"premium.plus","offerIdentifier":"loyal","format":"jws"}"#
                )
                #expect(deleted.status == 404 && deleted.code == "offerNotFound")
                #expect(try await client.call(.delete, offerPath, token: "operator").code == "offerNotFound")
            }
        }
    }

    /// The signatures' formats as Apple documents them, read back independently of the simulator.
    @Test func theSignaturesHaveApplesShapes() async throws {
        let key = P256.Signing.PrivateKey()
        let signer = OfferSigner(keyId: "ABC123DEFG", issuerId: "issuer-1", key: key, bundleId: "com.example.till")
        let nonce = UUID()
        let signature = try signer.promotionalSignature(
            productId: "premium.plus",
            offerIdentifier: "loyal",
            appAccountToken: "F0E1D2C3-0000-4000-8000-00000000ABCD",
            nonce: nonce,
            timestamp: 1_795_600_000_123
        )
        let payload = [
            "com.example.till", "ABC123DEFG", "premium.plus", "loyal", "f0e1d2c3-0000-4000-8000-00000000abcd",
            nonce.uuidString.lowercased(), "1795600000123",
        ].joined(separator: "\u{2063}")
        let der = try P256.Signing.ECDSASignature(derRepresentation: try #require(Data(base64Encoded: signature)))
        #expect(key.publicKey.isValidSignature(der, for: Data(payload.utf8)))

        let jws = try await signer.signedRequest(
            audience: "introductory-offer-eligibility",
            claims: OfferSigner.RequestClaims(
                productId: "premium.monthly",
                allowIntroductoryOffer: false,
                transactionId: "7"
            ),
            nonce: nonce,
            issuedAt: 1_795_600_000
        )
        let parts = jws.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        func segment(_ text: String) throws -> Any {
            try JSONSerialization.jsonObject(with: Data(Base64.decode(text, alphabet: .url) ?? []))
        }
        let header = try #require(try segment(parts[0]) as? [String: String])
        #expect(header == ["alg": "ES256", "kid": "ABC123DEFG", "typ": "JWT"])
        let claims = try #require(try segment(parts[1]) as? [String: Any])
        #expect(
            Set(claims.keys) == [
                "iss", "iat", "aud", "bid", "nonce", "productId", "allowIntroductoryOffer", "transactionId",
            ]
        )
        #expect(claims["aud"] as? String == "introductory-offer-eligibility" && claims["iat"] as? Int == 1_795_600_000)
        #expect(
            claims["allowIntroductoryOffer"] as? Bool == false
                && claims["nonce"] as? String == nonce.uuidString.lowercased()
        )
        let raw = try P256.Signing.ECDSASignature(rawRepresentation: Base64.decode(parts[2], alphabet: .url) ?? [])
        #expect(key.publicKey.isValidSignature(raw, for: Data("\(parts[0]).\(parts[1])".utf8)))
    }
}
