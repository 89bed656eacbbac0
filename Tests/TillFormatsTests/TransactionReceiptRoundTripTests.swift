import Foundation
import Testing
import TillCore
import TillFormats
import _CryptoExtras

/// Receipts the App Store simulator signs decode to the same purchase, in Apple's exact layout.
struct TransactionReceiptRoundTripTests {
    typealias Fixtures = TransactionReceiptFixtures

    @Test func subscriptionSurvivesSignEncodeDecode() throws {
        let transaction = Fixtures.subscription
        let signed = try Fixtures.signedReceipt(for: transaction)
        let decoded = try TransactionReceipt.decode(base64: signed.base64EncodedString())

        #expect(decoded == signed)
        #expect(decoded.signatureVersion == 3)
        #expect(decoded.signatureBytes?.count == 256)
        #expect(decoded.leafCertificateDER == Fixtures.identity2048.certificateDER)
        #expect(decoded.verifySignature() == .valid)
        #expect(decoded.environmentValue == "Sandbox")
        #expect(decoded.pod == "100")
        #expect(decoded.signingStatus == "0")
        #expect(try decoded.purchaseTransaction() == transaction)

        let info = decoded.purchaseInfo
        #expect(Set(info.fields.keys) == Set(TransactionReceipt.PurchaseInfo.Key.all))
        #expect(info.bundleVersion == "42")
        #expect(info.itemId == "1190360447")
        #expect(info.appItemId == "947936149")
        #expect(info.versionExternalIdentifier == "825366855")
        #expect(info.uniqueIdentifier == "fed543dc24065fa2ab23ef08b0b44c0a0c9ed375")
        #expect(info.uniqueVendorIdentifier == "D895D8DB-AEDF-4530-B7E5-E0C9A9A394B6")
    }

    @Test func datesAreSpelledAsAppleDoesInWinterAndSummerTime() throws {
        let receipt = try TransactionReceipt.decode(
            base64: try Fixtures.signedReceipt(for: Fixtures.subscription).base64EncodedString()
        )
        let info = receipt.purchaseInfo
        // Winter: Pacific Standard Time, UTC−8.
        #expect(info["purchase-date"] == "2024-01-15 12:34:56 Etc/GMT")
        #expect(info["purchase-date-pst"] == "2024-01-15 04:34:56 America/Los_Angeles")
        #expect(info["purchase-date-ms"] == "1705322096000")
        #expect(info["original-purchase-date"] == "2023-12-24 07:05:09 Etc/GMT")
        #expect(info["original-purchase-date-pst"] == "2023-12-23 23:05:09 America/Los_Angeles")
        #expect(info["original-purchase-date-ms"] == "1703401509000")
        // Summer: Pacific Daylight Time, UTC−7; `expires-date` is milliseconds.
        #expect(info["expires-date"] == "1721044800000")
        #expect(info["expires-date-formatted"] == "2024-07-15 12:00:00 Etc/GMT")
        #expect(info["expires-date-formatted-pst"] == "2024-07-15 05:00:00 America/Los_Angeles")
        #expect(info["web-order-line-item-id"] == "2000000077777777")
        #expect(info["is-trial-period"] == "false")
        #expect(info["is-in-intro-offer-period"] == "true")
        #expect(info["quantity"] == "1")
    }

    @Test func consumableInProductionHasNoSubscriptionKeysAndNoEnvironment() throws {
        let transaction = Fixtures.consumable
        let signed = try Fixtures.signedReceipt(for: transaction, pod: "16")
        let text = signed.base64EncodedString()
        let decoded = try TransactionReceipt.decode(base64: text)

        #expect(decoded.isSignatureValid())
        #expect(decoded.environmentValue == nil)
        #expect(decoded.environment == .production)
        #expect(decoded.pod == "16")
        #expect(decoded.purchaseInfo.fields.count == 17)
        #expect(decoded.purchaseInfo.expiresDate == nil)
        #expect(decoded.purchaseInfo.webOrderLineItemId == nil)
        #expect(decoded.purchaseInfo["is-trial-period"] == nil)
        #expect(decoded.purchaseInfo.quantity == 3)
        let mapped = try decoded.purchaseTransaction()
        #expect(mapped.productType == nil)
        #expect(mapped == transaction)

        let outer = String(decoding: Data(base64Encoded: text)!, as: UTF8.self)
        #expect(!outer.contains("environment"))
    }

    @Test func layoutIsApplesByteForByte() throws {
        let signed = try Fixtures.signedReceipt(for: Fixtures.subscription)
        let outer = String(decoding: Data(base64Encoded: signed.base64EncodedString())!, as: UTF8.self)
        let signature = Data(signed.signature!.bytes).base64EncodedString()
        let purchaseInfo = Data(signed.purchaseInfoBytes).base64EncodedString()
        #expect(
            outer
                == "{\n\t\"signature\" = \"\(signature)\";\n\t\"purchase-info\" = \"\(purchaseInfo)\";\n"
                + "\t\"environment\" = \"Sandbox\";\n\t\"pod\" = \"100\";\n\t\"signing-status\" = \"0\";\n}"
        )
        #expect(signed.base64EncodedString().hasPrefix("ewoJInNpZ25hdHVyZSIgPSAi"))  // {\n\t"signature" = "

        let inner = String(decoding: signed.purchaseInfoBytes, as: UTF8.self)
        let lines = inner.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first == "{")
        #expect(lines.last == "}")
        #expect(lines.count == 23 + 2)
        for line in lines.dropFirst().dropLast() {
            #expect(line.hasPrefix("\t\"") && line.hasSuffix("\";") && line.contains("\" = \""), "\(line)")
        }
        #expect(lines[1] == "\t\"original-purchase-date-pst\" = \"2023-12-23 23:05:09 America/Los_Angeles\";")
    }

    @Test func unknownPurchaseInfoKeysSurvive() throws {
        let info = TransactionReceipt.PurchaseInfo(
            transaction: Fixtures.consumable,
            bundleVersion: "1",
            itemId: "1",
            appItemId: "2",
            versionExternalIdentifier: "3",
            uniqueIdentifier: "u",
            uniqueVendorIdentifier: "v",
            additionalFields: ["in-app-ownership-type": "PURCHASED", "z-future": "a \"quoted\" value\n"]
        )
        let receipt = try TransactionReceipt.sign(
            purchaseInfo: info,
            environment: .production,
            pod: "100",
            privateKey: Fixtures.identity2048.privateKey,
            certificateDER: Fixtures.identity2048.certificateDER
        )
        let decoded = try TransactionReceipt.decode(base64: receipt.base64EncodedString())
        #expect(decoded.isSignatureValid())
        #expect(decoded.purchaseInfo == info)
        #expect(
            decoded.purchaseInfo.additionalFields == [
                "in-app-ownership-type": "PURCHASED", "z-future": "a \"quoted\" value\n",
            ]
        )
    }

    @Test func versionTwoSignaturesUseA1024BitKey() throws {
        let receipt = try TransactionReceipt.sign(
            purchaseInfo: Fixtures.purchaseInfo(for: Fixtures.subscription),
            environment: .sandbox,
            pod: "100",
            privateKey: Fixtures.identity1024.privateKey,
            certificateDER: Fixtures.identity1024.certificateDER,
            version: 2
        )
        let decoded = try TransactionReceipt.decode(base64: receipt.base64EncodedString())
        #expect(decoded.signatureVersion == 2)
        #expect(decoded.signatureBytes?.count == 128)
        #expect(try decoded.signature?.leafPublicKey().keySizeInBits == 1024)
        #expect(decoded.verifySignature() == .valid)
        #expect(try decoded.purchaseTransaction() == Fixtures.subscription)
    }

    @Test func signingRefusesKeysCertificatesAndVersionsThatDoNotFit() {
        let info = Fixtures.purchaseInfo(for: Fixtures.consumable)
        func sign(_ key: _RSA.Signing.PrivateKey, _ certificate: [UInt8], version: UInt8) throws {
            _ = try TransactionReceipt.sign(
                purchaseInfo: info,
                environment: .production,
                pod: "100",
                privateKey: key,
                certificateDER: certificate,
                version: version
            )
        }
        let key2048 = Fixtures.identity2048.privateKey
        let key1024 = Fixtures.identity1024.privateKey
        #expect(throws: TransactionReceiptError.signingFailed) {
            try sign(key1024, Fixtures.identity1024.certificateDER, version: 3)
        }
        #expect(throws: TransactionReceiptError.signingFailed) {
            try sign(key2048, Fixtures.identity2048.certificateDER, version: 2)
        }
        #expect(throws: TransactionReceiptError.signingFailed) {
            try sign(key2048, Fixtures.otherIdentity2048.certificateDER, version: 3)
        }
        #expect(throws: TransactionReceiptError.unsupportedSignatureVersion) {
            try sign(key2048, Fixtures.identity2048.certificateDER, version: 4)
        }
        #expect(throws: TransactionReceiptError.malformedSignature) {
            try sign(key2048, [0x30, 0x00, 0x00], version: 3)
        }
    }

    @Test func onlyThePurchaseInfoIsSigned() throws {
        let signed = try Fixtures.signedReceipt(for: Fixtures.subscription)
        // Outer keys are not covered by the signature: dropping "environment" keeps it valid.
        let relabelled = try TransactionReceipt(
            signature: signed.signature,
            purchaseInfoBytes: signed.purchaseInfoBytes,
            environmentValue: nil,
            pod: "1",
            signingStatus: "0"
        )
        #expect(relabelled.isSignatureValid())
        #expect(relabelled.environment == .production)
        // Re-serialising the same purchase-info differently (another key order) breaks it.
        let reordered = try TransactionReceipt(
            signature: signed.signature,
            purchaseInfoBytes: OpenStepPlist.dictionary(
                signed.purchaseInfo.fields.sorted(by: { $0.key < $1.key }).map {
                    OpenStepPlist.Entry(key: $0.key, value: .string($0.value))
                }
            ).serializedBytes(),
            environmentValue: "Sandbox",
            pod: "100",
            signingStatus: "0"
        )
        #expect(reordered.purchaseInfo == signed.purchaseInfo)
        #expect(reordered.verifySignature() == .invalid(.signatureMismatch))
    }

    @Test func mappingRejectsValuesNotInApplesSpelling() throws {
        func mapped(_ change: (inout TransactionReceipt.PurchaseInfo) -> Void) throws -> PurchaseTransaction {
            var info = Fixtures.purchaseInfo(for: Fixtures.subscription)
            change(&info)
            return try TransactionReceipt(
                signature: nil,
                purchaseInfoBytes: info.plist.serializedBytes(),
                environmentValue: "Sandbox",
                pod: nil,
                signingStatus: nil
            ).purchaseTransaction()
        }
        #expect(try mapped { _ in } == Fixtures.subscription)
        #expect(throws: TransactionReceiptError.missingField) { try mapped { $0["bid"] = nil } }
        #expect(throws: TransactionReceiptError.missingField) { try mapped { $0["purchase-date-ms"] = nil } }
        #expect(throws: TransactionReceiptError.invalidField) {
            try mapped { $0["purchase-date-ms"] = "2024-01-15 12:34:56 Etc/GMT" }
        }
        #expect(throws: TransactionReceiptError.invalidField) { try mapped { $0["expires-date"] = "-1" } }
        #expect(throws: TransactionReceiptError.invalidField) { try mapped { $0["quantity"] = "1x" } }
        #expect(throws: TransactionReceiptError.invalidField) { try mapped { $0["is-trial-period"] = "yes" } }
        // Without a web-order-line-item-id the product type is not known.
        #expect(try mapped { $0["web-order-line-item-id"] = nil }.productType == nil)
        // Without an original transaction the purchase is its own original.
        #expect(try mapped { $0["original-transaction-id"] = nil }.originalTransactionId == "2000000123456789")
    }
}
