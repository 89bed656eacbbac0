import Foundation
import Testing
import TillCore
import TillFormats
import TillTestSupport
import X509
import _CryptoExtras

/// Apple-signed iOS 6-style receipts (apple-formats.md §7.3) and Apple's unsigned mock (§7.1).
@Suite(
    .sharingTheMachine,
    .enabled(
        if: TransactionReceiptFixtures.vectorsAvailable,
        "Apple vectors not found in shared/reference/apple-vectors next to the repository; skipping"
    )
)
struct TransactionReceiptVectorTests {
    typealias Fixtures = TransactionReceiptFixtures

    @Test func t6V3ProductionSubscriptionMatchesEveryExpectedValue() throws {
        let text = try Fixtures.vector(Fixtures.t6V3Path)
        let receipt = try TransactionReceipt.decode(base64: text)

        #expect(receipt.signatureVersion == 3)
        #expect(receipt.signatureBytes?.count == 256)
        #expect(receipt.leafCertificateDER?.count == 1408)
        let leaf = try #require(try receipt.signature?.leafCertificateSummary())
        #expect(leaf.subjectCommonName == "Mac App Store and iTunes Store Receipt Signing")
        #expect(leaf.issuerCommonName == "Apple Worldwide Developer Relations Certification Authority")
        #expect(leaf.notValidBefore == Fixtures.utc(2015, 11, 13, 2, 15, 9))
        #expect(leaf.notValidAfter == Fixtures.utc(2023, 2, 7, 21, 48, 47))
        // RSA-2048: swift-certificates reads it, for chain verification.
        let certificate = try #require(try receipt.leafCertificate())
        #expect(certificate.subject == leaf.subject)
        #expect(try receipt.signature?.leafPublicKey().keySizeInBits == 2048)
        #expect(receipt.verifySignature() == .valid)
        #expect(receipt.isSignatureValid())

        #expect(receipt.environmentValue == nil)
        #expect(receipt.environment == .production)
        #expect(receipt.pod == "16")
        #expect(receipt.signingStatus == "0")
        #expect(receipt.additionalFields.isEmpty)

        let info = receipt.purchaseInfo
        #expect(info.fields.count == 23)
        #expect(info.additionalFields.isEmpty)
        #expect(info.transactionId == "160000408504141")
        #expect(info.originalTransactionId == "160000408504141")
        #expect(info.productId == "com.blendle.trending.premium_subscription.monthly")
        #expect(info.bundleId == "com.blendle.trending")
        #expect(info.bundleVersion == "7000")
        #expect(info.quantity == 1)
        #expect(info.purchaseDate == Date(millisecondsSince1970: 1_514_048_624_000))
        #expect(info.originalPurchaseDate == Date(millisecondsSince1970: 1_514_048_633_000))
        #expect(info.expiresDate == Date(millisecondsSince1970: 1_516_727_024_000))
        #expect(info.webOrderLineItemId == "160000091314729")
        #expect(info.isTrialPeriod == false)
        #expect(info.isInIntroOfferPeriod == false)
        #expect(info.appItemId == "947936149")
        #expect(info.itemId == "1190360447")
        #expect(info.uniqueIdentifier == "fed543dc24065fa2ab23ef08b0b44c0a0c9ed375")
        #expect(info.uniqueVendorIdentifier == "D895D8DB-AEDF-4530-B7E5-E0C9A9A394B6")
        #expect(info.versionExternalIdentifier == "825366855")
        // The date spellings agree with the milliseconds and with TillFormats' formatter.
        #expect(info["purchase-date"] == "2017-12-23 17:03:44 Etc/GMT")
        #expect(info["purchase-date-pst"] == ReceiptDate.formatPacific(info.purchaseDate!))
        #expect(info["expires-date-formatted"] == ReceiptDate.formatGMT(info.expiresDate!))
        #expect(info["expires-date-formatted-pst"] == "2018-01-23 09:03:44 America/Los_Angeles")

        let transaction = try receipt.purchaseTransaction()
        #expect(
            transaction
                == PurchaseTransaction(
                    transactionId: "160000408504141",
                    originalTransactionId: "160000408504141",
                    productId: "com.blendle.trending.premium_subscription.monthly",
                    bundleId: "com.blendle.trending",
                    productType: .autoRenewable,
                    quantity: 1,
                    purchaseDate: Date(millisecondsSince1970: 1_514_048_624_000),
                    originalPurchaseDate: Date(millisecondsSince1970: 1_514_048_633_000),
                    expiresDate: Date(millisecondsSince1970: 1_516_727_024_000),
                    webOrderLineItemId: "160000091314729",
                    environment: .production
                )
        )

        // Writing the decoded receipt back gives Apple's exact string.
        #expect(receipt.base64EncodedString() == text)
    }

    @Test func t6V2SandboxSubscriptionMatchesEveryExpectedValue() throws {
        let text = try Fixtures.vector(Fixtures.t6V2Path)
        let receipt = try TransactionReceipt.decode(base64: text)

        #expect(receipt.signatureVersion == 2)
        #expect(receipt.signatureBytes?.count == 128)
        #expect(receipt.leafCertificateDER?.count == 855)
        let leaf = try #require(try receipt.signature?.leafCertificateSummary())
        #expect(leaf.subjectCommonName == "PurchaseReceiptCertificate")
        #expect(leaf.issuerCommonName == "Apple iTunes Store Certification Authority")
        #expect(leaf.notValidBefore == Fixtures.utc(2014, 6, 7, 0, 2, 21))
        #expect(leaf.notValidAfter == Fixtures.utc(2016, 5, 18, 18, 31, 30))
        // RSA-1024: swift-certificates refuses the key, the signature still verifies.
        #expect(throws: (any Error).self) { try receipt.leafCertificate() }
        #expect(try receipt.signature?.leafPublicKey().keySizeInBits == 1024)
        #expect(receipt.verifySignature() == .valid)
        #expect(receipt.isSignatureValid())

        #expect(receipt.environmentValue == "Sandbox")
        #expect(receipt.environment == .sandbox)
        #expect(receipt.pod == "100")
        #expect(receipt.signingStatus == "0")

        let info = receipt.purchaseInfo
        #expect(info.fields.count == 19)
        #expect(info.transactionId == "1000000181298734")
        #expect(info.originalTransactionId == "1000000180636226")
        #expect(info.productId == "yearly")
        #expect(info.bundleId == "com.mbaasy.ios.demo")
        #expect(info.bundleVersion == "1")
        #expect(info.purchaseDate == Date(millisecondsSince1970: 1_447_821_281_000))
        #expect(info.originalPurchaseDate == Date(millisecondsSince1970: 1_447_778_081_000))
        #expect(info.expiresDate == Date(millisecondsSince1970: 1_448_346_881_000))
        #expect(info.webOrderLineItemId == "1000000030938713")
        #expect(info.isTrialPeriod == nil)
        #expect(info.appItemId == nil)
        #expect(info.itemId == "1028950797")
        #expect(info.uniqueVendorIdentifier == "4E5E1A3B-F01A-4855-820F-F349F1242148")
        #expect(info["expires-date-formatted"] == "2015-11-24 06:34:41 Etc/GMT")

        let transaction = try receipt.purchaseTransaction()
        #expect(transaction.transactionId == "1000000181298734")
        #expect(transaction.originalTransactionId == "1000000180636226")
        #expect(!transaction.isOriginal)
        #expect(transaction.productType == .autoRenewable)
        #expect(transaction.environment == .sandbox)
        #expect(transaction.expiresDate == Date(millisecondsSince1970: 1_448_346_881_000))
        #expect(transaction.isTrialPeriod == false)

        #expect(receipt.base64EncodedString() == text)
    }

    @Test(arguments: [TransactionReceiptFixtures.t6V3Path, TransactionReceiptFixtures.t6V2Path])
    func flippingAnyByteOfThePurchaseInfoBreaksTheSignature(path: String) throws {
        let receipt = try TransactionReceipt.decode(base64: try Fixtures.vector(path))
        let signature = try #require(receipt.signature)
        #expect(signature.isValid(forPurchaseInfo: receipt.purchaseInfoBytes))
        var stillDecodable = 0
        for index in receipt.purchaseInfoBytes.indices {
            for mask: UInt8 in [0x01, 0x80] {
                var tampered = receipt.purchaseInfoBytes
                tampered[index] ^= mask
                let accepted = signature.isValid(forPurchaseInfo: tampered)
                #expect(!accepted, "byte \(index) ^ \(mask)")
                if let rebuilt = try? TransactionReceipt(
                    signature: signature,
                    purchaseInfoBytes: tampered,
                    environmentValue: receipt.environmentValue,
                    pod: receipt.pod,
                    signingStatus: receipt.signingStatus
                ) {
                    stillDecodable += 1
                    let rebuiltAccepted = rebuilt.isSignatureValid()
                    #expect(!rebuiltAccepted, "byte \(index) ^ \(mask)")
                }
            }
        }
        // Most flips (inside values) still parse, so the check above is exercised on whole receipts.
        #expect(stillDecodable > receipt.purchaseInfoBytes.count / 2)
        // A changed signature byte fails too, and says so.
        var otherSignature = signature.signatureBytes
        otherSignature[otherSignature.count / 2] ^= 0x01
        let forged = try TransactionReceiptSignature(
            version: signature.version,
            signatureBytes: otherSignature,
            leafCertificateDER: signature.leafCertificateDER
        )
        #expect(forged.verify(purchaseInfo: receipt.purchaseInfoBytes) == .invalid(.signatureMismatch))
    }

    @Test func legacyMockParsesButCarriesNoSignature() throws {
        let text = try Fixtures.vector(Fixtures.legacyMockPath)
        let receipt = try TransactionReceipt.decode(base64: text)
        #expect(receipt.purchaseInfo.transactionId == "33993399")
        #expect(receipt.purchaseInfo.fields == ["transaction-id": "33993399"])
        // The file holds only "purchase-info": no signature, environment, pod or signing-status.
        #expect(receipt.signature == nil)
        #expect(receipt.signatureVersion == nil)
        #expect(receipt.leafCertificateDER == nil)
        #expect(receipt.environment == .production)
        #expect(receipt.pod == nil)
        #expect(receipt.verifySignature() == .invalid(.missingSignature))
        #expect(!receipt.isSignatureValid())
        // Too little to be a purchase: mapping says which key is missing instead of inventing values.
        do {
            _ = try receipt.purchaseTransaction()
            Issue.record("an unsigned receipt without a product mapped to a purchase")
        } catch {
            #expect(error == .missingField)
            #expect(error.message.contains("product-id"))
        }
    }
}
