import Foundation
import SwiftASN1
import Testing
import TillCore
import X509

@testable import TillFormats

struct TransactionReceiptVerifierTests {
    let anchors = TrustAnchors(
        roots: [TestAuthorities.receiptAuthority.root],
        intermediates: [TestAuthorities.receiptAuthority.intermediate]
    )

    func signed(bundleId: String = "com.example.till", environment: AppStoreEnvironment = .sandbox) throws
        -> TransactionReceipt
    {
        let transaction = PurchaseTransaction(
            transactionId: "1000000181298734",
            productId: "gems",
            bundleId: bundleId,
            purchaseDate: Date(timeIntervalSince1970: 1_700_000_000),
            environment: environment
        )
        var der = DER.Serializer()
        try der.serialize(TestAuthorities.receiptAuthority.leaf)
        return try TransactionReceipt.sign(
            purchaseInfo: TransactionReceipt.PurchaseInfo(
                transaction: transaction,
                bundleVersion: "1",
                itemId: "1",
                appItemId: "0",
                versionExternalIdentifier: "0",
                uniqueIdentifier: "0",
                uniqueVendorIdentifier: "D895D8DB-AEDF-4530-B7E5-E0C9A9A394B6"
            ),
            environment: environment,
            pod: "100",
            privateKey: TestAuthorities.receiptAuthority.leafKey.rsa!,
            certificateDER: der.serializedBytes
        )
    }

    @Test func aReceiptSignedByATrustedLeafVerifiesThroughTheAnchorsIntermediate() async throws {
        let verifier = TransactionReceiptVerifier(
            .init(anchors: anchors, bundleId: "com.example.till", environment: .sandbox)
        )
        let receipt = try signed()
        let verified = try #require(await verifier.verify(base64: receipt.base64EncodedString()).value)
        #expect(verified.purchaseInfo.transactionId == "1000000181298734")

        #expect(await verifier.verify(try signed(bundleId: "com.other")).failure?.reason == .invalidAppIdentifier)
        #expect(await verifier.verify(try signed(environment: .production)).failure?.reason == .invalidEnvironment)
        let untrusted = TransactionReceiptVerifier(.init(bundleId: "com.example.till"))
        #expect(await untrusted.verify(receipt).failure?.reason == .invalidChain)
    }

    @Test(.enabled(if: Vectors.shouldRun, Comment(rawValue: Vectors.skipMessage)))
    func applesVersion3ReceiptVerifiesWithTheBuiltInIntermediates() async throws {
        let text = try Vectors.text("third-party/misc/koenrh-apple_receipt-valid_receipt.txt")
        let verifier = TransactionReceiptVerifier(.init(bundleId: "com.blendle.trending", environment: .production))
        let receipt = try #require(await verifier.verify(base64: text).value)
        #expect(receipt.purchaseInfo.transactionId == "160000408504141")
        let later = TransactionReceiptVerifier(.init(validationTime: Date(timeIntervalSince1970: 1_790_000_000)))
        #expect(await later.verify(base64: text).failure?.reason == .invalidChain)
    }

    @Test(.enabled(if: Vectors.shouldRun, Comment(rawValue: Vectors.skipMessage)))
    func version2ReceiptsHaveAValidSignatureButAnUnvalidatableChain() async throws {
        let text = try Vectors.text("third-party/AppReceiptValidator/deprecatedSinglesTypeExpiredAppleCert_receipt.b64")
        let receipt = try TransactionReceipt.decode(base64: text)
        #expect(receipt.isSignatureValid())
        #expect(await TransactionReceiptVerifier(.init()).verify(receipt).failure?.reason == .invalidCertificate)
    }
}
