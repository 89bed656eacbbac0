import Foundation
import SwiftASN1
import Testing
import TillCore
import X509

@testable import TillFormats

enum ReceiptFixtures {
    static let created = Date(timeIntervalSince1970: 1_700_000_000)

    /// A sandbox receipt shaped like the App Store's, with `count` purchases of every kind.
    static func receipt(purchases count: Int = 10, bundleId: String = "com.example.till") -> AppReceipt {
        var purchases: [InAppPurchase] = []
        for i in 0..<count {
            let start = created - Double(count - i) * 86_400
            let isSubscription = i % 2 == 0
            purchases.append(
                InAppPurchase(
                    quantity: 1 + i % 3,
                    productId: isSubscription ? "com.example.till.monthly" : "com.example.till.gems\(i)",
                    transactionId: String(2_000_000_100_000_000 + i),
                    purchaseDate: start,
                    originalTransactionId: String(2_000_000_100_000_000 + (isSubscription ? 0 : i)),
                    originalPurchaseDate: start - 5,
                    productTypeCode: isSubscription ? 3 : 1,
                    expiresDate: isSubscription ? start + 30 * 86_400 : nil,
                    webOrderLineItemId: isSubscription ? 2_000_000_010_000_000 + Int64(i) : nil,
                    cancellationDate: i == 3 ? start + 3600 : nil,
                    isTrialPeriod: isSubscription ? i == 0 : nil,
                    isInIntroOfferPeriod: isSubscription ? false : nil,
                    otherAttributes: [ReceiptAttribute(type: 1710, value: ReceiptValue.integer(0))]
                )
            )
        }
        return AppReceipt(
            receiptType: "ProductionSandbox",
            appItemId: 0,
            bundleId: bundleId,
            applicationVersion: "42",
            opaqueValue: Array(0..<16),
            sha1Hash: AppReceipt.deviceHash(
                identifier: device,
                opaqueValue: Array(0..<16),
                bundleIdAttributeValue: ReceiptValue.utf8String(bundleId)
            ),
            receiptCreationDate: created,
            downloadId: 0,
            versionExternalIdentifier: 0,
            inAppPurchases: purchases,
            originalPurchaseDate: Date(timeIntervalSince1970: 1_375_340_400),
            originalApplicationVersion: "1.0",
            otherAttributes: [ReceiptAttribute(type: 10, value: [0x16, 0x02, 0x34, 0x2B])]
        )
    }

    static let device: [UInt8] = Array(repeating: 0xAB, count: 16)

    static func signer(
        _ authority: SigningAuthority = TestAuthorities.receiptAuthority,
        digest: ReceiptSigner.Digest = .sha256,
        layout: ReceiptSigner.Layout = .appStore,
        signedAttributes: Bool = false
    ) -> ReceiptSigner {
        try! ReceiptSigner(
            key: authority.leafKey.rsa!,
            certificates: authority.chain,
            digest: digest,
            layout: layout,
            signedAttributes: signedAttributes
        )
    }

    static var verifier: ReceiptVerifier {
        ReceiptVerifier(
            .init(
                anchors: TestAuthorities.receiptAuthority.anchors,
                bundleId: "com.example.till",
                environment: .sandbox
            )
        )
    }
}

struct ReceiptRoundTripTests {
    @Test(arguments: [ReceiptSigner.Layout.appStore, .xcode], [ReceiptSigner.Digest.sha1, .sha256])
    func signThenVerifyGivesBackTheSameReceipt(layout: ReceiptSigner.Layout, digest: ReceiptSigner.Digest) async throws
    {
        for signedAttributes in [false, true] {
            let receipt = ReceiptFixtures.receipt()
            let der = try ReceiptFixtures.signer(digest: digest, layout: layout, signedAttributes: signedAttributes)
                .sign(receipt)
            #expect(der.starts(with: layout == .xcode ? [0x30, 0x80] : [0x30, 0x82]))
            let outcome = await ReceiptFixtures.verifier.verify(der: der)
            let verified = try #require(outcome.value, "\(String(describing: outcome.failure))")
            // DER orders the in-app entries by their encoding, so compare them as a set.
            var expected = receipt
            expected.inAppPurchases.sort { $0.transactionId < $1.transactionId }
            var decoded = verified.receipt
            decoded.inAppPurchases.sort { $0.transactionId < $1.transactionId }
            #expect(decoded == expected)
            #expect(verified.receipt.matchesDevice(identifier: ReceiptFixtures.device))
            #expect(await ReceiptFixtures.verifier.verify(base64: Base64.encode(der)).isValid)
        }
    }

    @Test func attributesAreOrderedByEncodingAsDERRequires() throws {
        let payload = ReceiptFixtures.receipt(purchases: 3).payloadDER()
        let reader = ASN1Reader(payload)
        let set = try reader.element(at: 0, limit: payload.count)
        let encodings = try reader.children(of: set).map { Array(reader.encoding(of: $0)) }
        #expect(encodings == encodings.sorted { $0.lexicographicallyPrecedes($1) })
        #expect(encodings.count > 10)
    }

    @Test func aReceiptSignedByAnotherAuthorityOrForAnotherAppIsRefused() async throws {
        let impostor = try TestPKI.makeAuthority(kind: .rsa2048, name: "Impostor Receipts")
        let forged = try ReceiptFixtures.signer(impostor).sign(ReceiptFixtures.receipt())
        let forgedOutcome = await ReceiptFixtures.verifier.verify(der: forged)
        #expect(forgedOutcome.failure?.reason == .invalidChain, "\(String(describing: forgedOutcome.failure))")

        let otherApp = try ReceiptFixtures.signer().sign(ReceiptFixtures.receipt(bundleId: "com.example.other"))
        #expect(await ReceiptFixtures.verifier.verify(der: otherApp).failure?.reason == .invalidAppIdentifier)

        var production = ReceiptFixtures.receipt()
        production.receiptType = "Production"
        let wrongEnvironment = try ReceiptFixtures.signer().sign(production)
        #expect(await ReceiptFixtures.verifier.verify(der: wrongEnvironment).failure?.reason == .invalidEnvironment)
    }

    @Test func aLeafWithoutApplesReceiptSigningMarkerIsRefused() async throws {
        let unmarked = try TestPKI.makeAuthority(
            kind: .rsa2048,
            name: "Unmarked",
            leafMarker: [1, 2, 840, 113635, 100, 6, 11, 2]
        )
        let der = try ReceiptFixtures.signer(unmarked).sign(ReceiptFixtures.receipt())
        let verifier = ReceiptVerifier(.init(anchors: unmarked.anchors))
        let outcome = await verifier.verify(der: der)
        #expect(outcome.failure?.reason == .invalidChain, "\(String(describing: outcome.failure))")
    }

    @Test func theSizeLimitIsEnforcedBeforeParsing() async throws {
        let der = try ReceiptFixtures.signer().sign(ReceiptFixtures.receipt())
        let small = ReceiptVerifier(
            .init(anchors: TestAuthorities.receiptAuthority.anchors, maximumSize: der.count - 1)
        )
        #expect(await small.verify(der: der).failure?.reason == .tooLarge)
        #expect(await small.verify(base64: String(repeating: "A", count: der.count * 2)).failure?.reason == .tooLarge)
    }

    @Test func deeplyNestedBERIsRefusedWithoutRecursingForever() async {
        let nested = [UInt8](repeating: 0x30, count: 1).flatMap { _ in
            Array(repeating: [UInt8]([0x30, 0x80]), count: 5000).flatMap { $0 }
        }
        #expect(await ReceiptFixtures.verifier.verify(der: nested).failure?.reason == .invalidFormat)
    }

    @Test func datesUseAppleSpellings() {
        let summer = Date(timeIntervalSince1970: 1_439_452_246)  // 2015-08-13 07:50:46 UTC
        #expect(ReceiptDate.formatRFC3339(summer) == "2015-08-13T07:50:46Z")
        #expect(ReceiptDate.formatGMT(summer) == "2015-08-13 07:50:46 Etc/GMT")
        #expect(ReceiptDate.formatPacific(summer) == "2015-08-13 00:50:46 America/Los_Angeles")
        let winter = Date(timeIntervalSince1970: 1_421_134_200)  // 2015-01-13 07:30:00 UTC
        #expect(ReceiptDate.formatPacific(winter) == "2015-01-12 23:30:00 America/Los_Angeles")
        #expect(ReceiptDate.parseRFC3339("2015-08-13T07:50:46Z") == summer)
        #expect(ReceiptDate.parseGMT("2015-08-13 07:50:46 Etc/GMT") == summer)
        #expect(ReceiptDate.parseRFC3339("2015-02-30T07:50:46Z") == nil)
        #expect(ReceiptDate.parseRFC3339("2015-08-13T07:50:46") == nil)
    }
}
