import Foundation
import Testing
import TillCore
import TillFormats
import TillTestSupport

@testable import TillSimulator

/// Apple's own signature creators (Python) make promotional-offer signatures (the original ECDSA one and the JWS)
/// and introductory-offer eligibility JWS exactly as a developer's server would; the simulator must accept them,
/// refuse tampered and replayed ones, and sign transactions and renewal info that Apple's verifier reads back with
/// the offer.
@Suite(.sharingTheMachine)
struct OfferSignatureJudgeTests {
    @Test(.enabled(if: PythonJudge.enabled, PythonJudge.skipMessage), arguments: TestDatabase.all)
    func applesSignatureCreatorsAreAcceptedAndTamperingIsRefused(_ database: TestDatabase) async throws {
        try PythonJudge.requireLibrary()
        let fixture = try await SimulatorFixture.make(database: database)
        let simulator = fixture.simulator
        let app = fixture.app.appAppleId
        _ = try await simulator.offers.createOffer(
            appAppleId: app,
            productId: "premium.monthly",
            OfferInput(kind: .introductory, discountType: .freeTrial, duration: "P1W")
        )
        _ = try await simulator.offers.createOffer(
            appAppleId: app,
            productId: "premium.plus.monthly",
            OfferInput(kind: .promotional, offerIdentifier: "winter", discountType: .payAsYouGo, periods: 2, price: 990)
        )
        let other = try await simulator.appStoreConnect.createAccount(AccountInput(environment: "Sandbox"))
        let otherPhone = try await simulator.appStoreConnect.createDevice(accountId: other.id, DeviceInput(name: "iPhone"))
        let key = try await simulator.appStoreConnect.createAPIKey(appAppleId: app)

        try await withServices({ buildSimulatorApplication(simulator, port: 0, onServerRunning: $0) }) { port in
            let spec: [String: Any] = [
                "rootDER": Base64.encode(try derBytes(simulator.signer.jwsAuthority.root)),
                "environment": "Sandbox", "bundleId": SimulatorFixture.bundleId, "appAppleId": app,
                "storeKitURL": "http://127.0.0.1:\(port)/storekit/sandbox",
                "firstDevice": fixture.phone.id, "secondDevice": otherPhone.id,
                "privateKey": key.privateKey, "keyId": key.keyId, "issuerId": key.issuerId,
            ]
            let (status, summary) = try await PythonJudge.run("offer_signature_judge.py", spec: spec)
            try #require(status == 0, "\(summary)")
            let blocked = try #require(summary["introductoryBlocked"] as? [String: Any])
            #expect(blocked["state"] as? String == "purchased" && blocked["offerType"] is NSNull)
            let automatic = try #require(summary["introductoryAutomatic"] as? [String: Any])
            #expect(automatic["offerType"] as? Int == 1 && automatic["offerDiscountType"] as? String == "FREE_TRIAL")
            #expect(automatic["offerPeriod"] as? String == "P1W" && automatic["price"] as? Int == 0)
            let promotional = try #require(summary["promotionalV1"] as? [String: Any])
            #expect(promotional["offerType"] as? Int == 2 && promotional["offerIdentifier"] as? String == "winter")
            #expect(promotional["offerDiscountType"] as? String == "PAY_AS_YOU_GO" && promotional["price"] as? Int == 990)
            #expect(promotional["offerPeriod"] as? String == "P2M")
            for refused in ["promotionalV1Replayed", "promotionalV1Tampered", "promotionalV1OtherToken", "promotionalV2Forged"] {
                let answer = try #require(summary[refused] as? [String: Any], "\(refused)")
                #expect(answer["state"] as? String == "failed" && answer["error"] as? Int == 12, "\(refused): \(answer)")
            }
            #expect((summary["promotionalV2"] as? [String: Any])?["state"] as? String == "purchased")
            let renewal = try #require(summary["renewalAfterV2"] as? [String: Any])
            #expect(renewal["offerType"] as? Int == 2 && renewal["offerIdentifier"] as? String == "winter")
            #expect(renewal["renewalPrice"] as? Int == 990)
        }
    }
}
