import Crypto
import Foundation
import SwiftASN1
import Testing
import TillCore
import X509

@testable import TillFormats

/// Apple's own test data (§7.1) and a real sandbox transaction (§7.4), with the verdicts of Apple's libraries.
@Suite(.enabled(if: Vectors.shouldRun, Comment(rawValue: Vectors.skipMessage)))
struct AppleJWSVectorTests {
    func testRoot() throws -> TrustAnchors {
        TrustAnchors(roots: [try Certificate(derEncoded: Vectors.bytes("apple-library/certs/testCA.der"))])
    }

    @Test func mockTransactionInfoVerifiesUnderApplesTestRoot() async throws {
        let jws = try Vectors.text("apple-library/mock_signed_data/transactionInfo")
        let verifier = SignedDataVerifier(
            .init(anchors: try testRoot(), bundleId: "com.example", environment: .sandbox)
        )
        let verified = try #require(await verifier.verify(jws, as: ProbePayload.self).value)
        #expect(verified.payload.environment == .sandbox)
        #expect(verified.payload.signedDate == Date(millisecondsSince1970: 1_672_956_154_000))
        // The x5c root differs from testCA.der (same subject and key): the path is built from the configured root.
        #expect(verified.chain?.certificates.last == (try testRoot()).roots[0])

        let wrongBundle = SignedDataVerifier(
            .init(anchors: try testRoot(), bundleId: "com.example.x", environment: .sandbox)
        )
        #expect(await wrongBundle.verify(jws, as: ProbePayload.self).failure?.reason == .invalidAppIdentifier)
    }

    @Test func mockRenewalInfoWithASHA384ChainVerifies() async throws {
        let jws = try Vectors.text("apple-library/mock_signed_data/renewalInfo")
        let verifier = SignedDataVerifier(
            .init(anchors: try testRoot(), bundleId: "com.example", environment: .sandbox)
        )
        let verified = try #require(await verifier.verify(jws, as: ProbeRenewal.self).value)
        #expect(verified.payload.environment == .sandbox)
    }

    @Test func aHeaderWithoutX5CIsAFormatError() async throws {
        let jws = try Vectors.text("apple-library/mock_signed_data/missingX5CHeaderClaim")
        let verifier = SignedDataVerifier(
            .init(anchors: try testRoot(), bundleId: "com.example", environment: .sandbox)
        )
        #expect(await verifier.verify(jws, as: ProbePayload.self).failure?.reason == .invalidFormat)
    }

    @Test func theRealSandboxTransactionVerifiesAtItsSignedDateOnly() async throws {
        let jws = try Vectors.text("third-party/misc/mingos-sandbox-transaction.jws")
        let atSignedDate = SignedDataVerifier(.init(bundleId: "com.goodheartapp", environment: .sandbox))
        let verified = try #require(await atSignedDate.verify(jws, as: ProbePayload.self).value)
        #expect(verified.payload.productId == "gh_super_good_ticket_1")
        #expect(verified.chain?.certificates.last == TrustAnchors.appleRootCAG3)

        let today = SignedDataVerifier(
            .init(
                bundleId: "com.goodheartapp",
                environment: .sandbox,
                validationTime: Date(timeIntervalSince1970: 1_795_000_000)
            )
        )
        #expect(await today.verify(jws, as: ProbePayload.self).failure?.reason == .invalidChain)

        let production = SignedDataVerifier(.init(bundleId: "com.goodheartapp", environment: .production))
        #expect(await production.verify(jws, as: ProbePayload.self).failure?.reason == .invalidEnvironment)

        let testRootOnly = SignedDataVerifier(
            .init(anchors: try testRoot(), bundleId: "com.goodheartapp", environment: .sandbox)
        )
        #expect(await testRootOnly.verify(jws, as: ProbePayload.self).failure?.reason == .invalidChain)
    }

    @Test func mockNotificationsFollowApplesVerdicts() async throws {
        let test = try Vectors.text("apple-library/mock_signed_data/testNotification")
        let sandbox = SignedDataVerifier(.init(anchors: try testRoot(), bundleId: "com.example", environment: .sandbox))
        let verified = try #require(await sandbox.verify(test, as: ResponseBodyV2DecodedPayload.self).value)
        #expect(verified.payload.notificationType == .test)
        #expect(verified.payload.notificationUUID == "9ad56bd2-0bc6-42e0-af24-fd996d87a1e6")

        let production = SignedDataVerifier(
            .init(anchors: try testRoot(), bundleId: "com.example", appAppleId: 1234, environment: .production)
        )
        #expect(
            await production.verify(test, as: ResponseBodyV2DecodedPayload.self).failure?.reason == .invalidEnvironment
        )
        let otherApp = SignedDataVerifier(
            .init(anchors: try testRoot(), bundleId: "com.example", appAppleId: 1235, environment: .production)
        )
        #expect(
            await otherApp.verify(test, as: ResponseBodyV2DecodedPayload.self).failure?.reason == .invalidAppIdentifier
        )
        // Decoded as a transaction it has no bundle id.
        let asTransaction = SignedDataVerifier(
            .init(anchors: try testRoot(), bundleId: "com.example", appAppleId: 1235, environment: .sandbox)
        )
        #expect(
            await asTransaction.verify(test, as: JWSTransactionDecodedPayload.self).failure?.reason
                == .invalidAppIdentifier
        )

        let wrongBundle = try Vectors.text("apple-library/mock_signed_data/wrongBundleId")
        #expect(
            await sandbox.verify(wrongBundle, as: ResponseBodyV2DecodedPayload.self).failure?.reason
                == .invalidAppIdentifier
        )
    }

    @Test func xcodeSignedDataVerifiesInTheXcodeEnvironmentOnly() async throws {
        let bundle = "com.example.naturelab.backyardbirds.example"
        // The project's StoreKit test certificate, as Editor → Save Public Certificate exports it: the one in x5c.
        let headerSegment = try Vectors.text("apple-library/xcode/xcode-signed-transaction").split(separator: ".")[0]
        let headerJSON = try #require(Base64.decode(headerSegment, alphabet: .url))
        let header = try JSONDecoder().decode(JWSHeader.self, from: Data(headerJSON))
        let leaf = try #require(header.x5c?.first)
        let exported = try Certificate(derEncoded: try #require(Base64.decode(leaf, alphabet: .standard)))
        let xcode = SignedDataVerifier(
            .init(anchors: TrustAnchors(roots: [exported]), bundleId: bundle, environment: .xcode)
        )
        // Without it, nothing vouches for the data (Apple's libraries would accept it unchecked).
        #expect(
            await SignedDataVerifier(.init(bundleId: bundle, environment: .xcode)).verify(
                try Vectors.text("apple-library/xcode/xcode-signed-transaction"),
                as: JWSTransactionDecodedPayload.self
            ).failure?.reason == .invalidChain
        )
        let transaction = try #require(
            await xcode.verify(
                try Vectors.text("apple-library/xcode/xcode-signed-transaction"),
                as: JWSTransactionDecodedPayload.self
            ).value
        )
        #expect(
            transaction.payload.productId == "pass.premium"
                && transaction.payload.subscriptionGroupIdentifier == "6F3A93AB"
        )
        #expect(transaction.payload.purchaseDate == Date(millisecondsSince1970: 1_697_679_936_049))
        #expect(transaction.payload.expiresDate == Date(millisecondsSince1970: 1_700_358_336_049))
        #expect(transaction.chain == nil)
        let renewal = try #require(
            await xcode.verify(
                try Vectors.text("apple-library/xcode/xcode-signed-renewal-info"),
                as: JWSRenewalInfoDecodedPayload.self
            ).value
        )
        #expect(renewal.payload.renewalDate == Date(millisecondsSince1970: 1_700_358_336_049))
        let app = try Vectors.text("apple-library/xcode/xcode-signed-app-transaction")
        #expect(
            await xcode.verify(app, as: AppTransaction.self).value?.payload.originalPurchaseDate
                == Date(millisecondsSince1970: -62_135_769_600_000)
        )

        let production = SignedDataVerifier(.init(bundleId: bundle, appAppleId: 1234, environment: .production))
        #expect(await production.verify(app, as: AppTransaction.self).failure?.reason == .invalidChainLength)

        // Till still checks the signature of locally signed data (Apple's libraries do not).
        let parts = app.split(separator: ".")
        var payload = String(decoding: Base64.decode(parts[1], alphabet: .url)!, as: UTF8.self)
        payload = payload.replacingOccurrences(of: "\"applicationVersion\":\"1\"", with: "\"applicationVersion\":\"2\"")
        let tampered = [String(parts[0]), Base64.encode(Array(payload.utf8), alphabet: .url), String(parts[2])].joined(
            separator: "."
        )
        #expect(await xcode.verify(tampered, as: AppTransaction.self).failure?.reason == .verificationFailure)
    }

    // The chain constants of Apple's SignedDataVerifierTests (validation time 1761962975 unless stated).
    @Test(arguments: [
        ("leaf_cert", "intermediate_ca", "root_ca", 1_761_962_975, true),
        ("leaf_cert_for_intermediate_ca_invalid_oid", "intermediate_ca_invalid_oid", "root_ca", 1_761_962_975, false),
        ("leaf_cert_invalid_oid", "intermediate_ca", "root_ca", 1_761_962_975, false),
        ("leaf_cert", "intermediate_ca", "root_ca", 2_280_946_846, false),
        ("leaf_cert", "intermediate_ca", "real_apple_root", 1_761_962_975, false),
        ("real_apple_signing_certificate", "real_apple_intermediate", "real_apple_root", 1_761_962_975, true),
    ])
    func chainConstants(leaf: String, intermediate: String, root: String, time: Int, valid: Bool) async throws {
        func cert(_ name: String) throws -> Certificate {
            try Certificate(derEncoded: Vectors.bytes("apple-library/x509-chain-constants/\(name).der"))
        }
        let validator = ChainValidator(anchors: TrustAnchors(roots: [try cert(root)]), requirements: .receiptSigning)
        let outcome = await validator.validate(
            leaf: try cert(leaf),
            intermediates: [try cert(intermediate)],
            at: Date(timeIntervalSince1970: Double(time))
        )
        if case .valid = outcome { #expect(valid) } else { #expect(!valid) }
    }

    @Test func builtInRootsAreApplesPinnedCertificates() throws {
        func fingerprint(_ certificate: Certificate) throws -> String {
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return SHA256.hash(data: serializer.serializedBytes).map { String(format: "%02X", $0) }.joined(
                separator: ":"
            )
        }
        #expect(
            try fingerprint(TrustAnchors.appleRootCAG3)
                == "63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79"
        )
        #expect(
            try fingerprint(TrustAnchors.appleIncRoot)
                == "B0:B1:73:0E:CB:C7:FF:45:05:14:2C:49:F1:29:5E:6E:DA:6B:CA:ED:7E:2C:68:C5:BE:91:B5:A1:10:01:F0:24"
        )
    }
}
