import Foundation
import Testing
import TillCore

@testable import TillFormats

struct InspectorTests {
    func object(_ line: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test func aValidJWSIsReportedWithItsPayloadUnderApplesNames() async throws {
        let jws = try TestAuthorities.jwsSigner.sign(Samples.transaction())
        let inspector = Inspector(
            .init(roots: [TestAuthorities.jwsAuthority.root], bundleId: "com.example.till", environment: .sandbox)
        )
        let line = await inspector.inspectJWS(jws).jsonLine()
        #expect(line.hasPrefix(#"{"valid":true,"reason":"valid""#))
        let report = try object(line)
        let payload = try #require(report["payload"] as? [String: Any])
        #expect(report["kind"] as? String == "transaction")
        #expect(payload["transactionId"] as? String == "2000000847061981")
        #expect(payload["purchaseDate"] as? Int == 1_738_645_560_000)
    }

    @Test func failuresCarryTheReasonAndApplesStatus() async throws {
        let jws = try TestAuthorities.jwsSigner.sign(Samples.transaction())
        let wrongApp = Inspector(.init(roots: [TestAuthorities.jwsAuthority.root], bundleId: "com.other"))
        let report = try object(await wrongApp.inspectJWS(jws).jsonLine())
        #expect(report["valid"] as? Bool == false)
        #expect(report["reason"] as? String == "invalidAppIdentifier")
        #expect(report["appleStatus"] as? String == "INVALID_APP_IDENTIFIER")
        #expect(report["payload"] is [String: Any])

        let applesRoots = Inspector(.init())
        #expect(try object(await applesRoots.inspectJWS(jws).jsonLine())["reason"] as? String == "invalidChain")
        #expect(try object(await applesRoots.inspectJWS("not a jws").jsonLine())["payload"] is NSNull)
    }

    @Test func noVerifyDecodesAndSaysSo() async throws {
        let jws = try TestAuthorities.jwsSigner.sign(Samples.transaction())
        let report = try object(await Inspector(.init(verify: false)).inspectJWS(jws).jsonLine())
        #expect(report["valid"] as? Bool == false)
        #expect(report["reason"] as? String == "notVerified")
        #expect((report["payload"] as? [String: Any])?["productId"] as? String == "com.example.till.monthly")
    }

    @Test func receiptsAreDescribedWithVerifyReceiptNamesAndTheHiddenAttributes() async throws {
        let receipt = Samples.receipt(purchases: 2)
        let der = try ReceiptFixtures.signer().sign(receipt)
        let inspector = Inspector(.init(roots: [TestAuthorities.receiptAuthority.root], bundleId: "com.example.till"))
        let report = try object(await inspector.inspectReceipt(Base64.encode(der)).jsonLine())
        #expect(report["valid"] as? Bool == true)
        let payload = try #require(report["payload"] as? [String: Any])
        #expect(payload["bundle_id"] as? String == "com.example.till")
        #expect(payload["receipt_type"] as? String == "ProductionSandbox")
        #expect(payload["receipt_creation_date"] as? String == "2023-11-14 22:13:20 Etc/GMT")
        #expect(payload["opaque_value"] as? String == "000102030405060708090a0b0c0d0e0f")
        let inApp = try #require(payload["in_app"] as? [[String: Any]])
        #expect(inApp.count == 2)
        #expect(
            inApp.contains {
                $0["product_type"] as? String == "3" && $0["web_order_line_item_id"] as? String == "2000000021470597"
            }
        )
        #expect(inApp.allSatisfy { ($0["other_attributes"] as? [Any])?.count == 8 })
    }

    /// An iOS 6-style receipt carries only its leaf: the intermediate given beside the root (as the simulator's
    /// `receipt-intermediate.pem`) completes its chain, and vouches for nothing without the root.
    @Test func anIntermediateGivenAsARootCompletesAnIOS6ReceiptsChain() async throws {
        // Signed by the test receipt authority's leaf, as TransactionReceiptVerifierTests signs them.
        let receipt = try TransactionReceiptVerifierTests().signed()
        let authority = TestAuthorities.receiptAuthority
        let both = Inspector(.init(roots: [authority.root, authority.intermediate]))
        let report = try object(await both.inspectReceipt(receipt.base64EncodedString()).jsonLine())
        #expect(report["valid"] as? Bool == true, "\(report)")
        let alone = Inspector(.init(roots: [authority.intermediate]))
        let refused = try object(await alone.inspectReceipt(receipt.base64EncodedString()).jsonLine())
        #expect(refused["valid"] as? Bool == false && refused["reason"] as? String == "invalidChain", "\(refused)")
    }

    @Test func guessesThePayloadKindFromItsKeys() {
        func kind(_ json: String) -> JWSPayloadKind? { Inspector.guessKind(Array(json.utf8)) }
        #expect(kind(#"{"notificationType":"TEST"}"#) == .notification)
        #expect(kind(#"{"receiptType":"Sandbox","bundleId":"x"}"#) == .appTransaction)
        #expect(kind(#"{"autoRenewStatus":1,"productId":"x"}"#) == .renewalInfo)
        #expect(kind(#"{"bundleId":"x","environment":"Sandbox"}"#) == .transaction)
        #expect(kind(#"{"environment":"Sandbox","signedDate":1}"#) == .renewalInfo)
    }
}
