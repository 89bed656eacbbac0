import Crypto
import Foundation
import SwiftASN1
import Testing
import TillCore
import TillFormats
import X509

/// Malformed and tampered receipts: always a thrown error or an invalid signature, never a crash.
struct TransactionReceiptHostileInputTests {
    typealias Fixtures = TransactionReceiptFixtures

    /// A valid signed receipt's signature blob.
    private static func validBlob() throws -> [UInt8] {
        try #require(try Fixtures.signedReceipt(for: Fixtures.consumable).signature).bytes
    }

    /// The base64 of an outer plist with the given entries.
    private static func receipt(_ entries: KeyValuePairs<String, OpenStepPlist>) -> String {
        Data(OpenStepPlist.dictionary(entries).serializedBytes()).base64EncodedString()
    }

    private static func base64(_ bytes: [UInt8]) -> OpenStepPlist {
        .string(Data(bytes).base64EncodedString())
    }

    private static func blob(version: UInt8, signatureLength: Int, declared: UInt32, certificate: [UInt8]) -> [UInt8] {
        [version] + [UInt8](repeating: 0xAB, count: signatureLength)
            + [
                UInt8(declared >> 24), UInt8(declared >> 16 & 0xFF), UInt8(declared >> 8 & 0xFF),
                UInt8(declared & 0xFF),
            ]
            + certificate
    }

    @Test func everyTruncationOfASignatureBlobIsRefused() throws {
        let blob = try Self.validBlob()
        #expect(try TransactionReceiptSignature(bytes: blob).bytes == blob)
        for length in 0..<blob.count {
            #expect(throws: TransactionReceiptError.self, "prefix of \(length) bytes") {
                try TransactionReceiptSignature(bytes: blob[..<length])
            }
        }
        #expect(throws: TransactionReceiptError.malformedSignature) {
            try TransactionReceiptSignature(bytes: blob + [0])
        }
    }

    @Test func declaredLengthsMustAddUpExactly() throws {
        let certificate = Fixtures.identity2048.certificateDER
        let count = UInt32(certificate.count)
        #expect(throws: Never.self) {
            try TransactionReceiptSignature(
                bytes: Self.blob(version: 3, signatureLength: 256, declared: count, certificate: certificate)
            )
        }
        for declared in [count - 1, count + 1, 0, UInt32.max, UInt32(1) << 31] {
            #expect(throws: TransactionReceiptError.malformedSignature, "declared \(declared)") {
                try TransactionReceiptSignature(
                    bytes: Self.blob(version: 3, signatureLength: 256, declared: declared, certificate: certificate)
                )
            }
        }
        // A version byte that does not match the signature length shifts every later field.
        #expect(throws: TransactionReceiptError.malformedSignature) {
            try TransactionReceiptSignature(
                bytes: Self.blob(version: 2, signatureLength: 256, declared: count, certificate: certificate)
            )
        }
        #expect(throws: TransactionReceiptError.malformedSignature) {
            try TransactionReceiptSignature(
                bytes: Self.blob(version: 3, signatureLength: 128, declared: count, certificate: certificate)
            )
        }
        for version: UInt8 in [0, 1, 4, 0x30, 0xFF] {
            #expect(throws: TransactionReceiptError.unsupportedSignatureVersion, "version \(version)") {
                try TransactionReceiptSignature(
                    bytes: Self.blob(version: version, signatureLength: 256, declared: count, certificate: certificate)
                )
            }
        }
        #expect(throws: TransactionReceiptError.malformedSignature) {
            try TransactionReceiptSignature(
                version: 3,
                signatureBytes: [UInt8](repeating: 1, count: 255),
                leafCertificateDER: certificate
            )
        }
    }

    @Test func certificatesMustBeOneBoundedDERElement() throws {
        func parse(_ certificate: [UInt8]) throws {
            _ = try TransactionReceiptSignature(
                bytes: Self.blob(
                    version: 3,
                    signatureLength: 256,
                    declared: UInt32(certificate.count),
                    certificate: certificate
                )
            )
        }
        let certificate = Fixtures.identity2048.certificateDER
        #expect(throws: TransactionReceiptError.malformedSignature) { try parse([]) }
        #expect(throws: TransactionReceiptError.malformedSignature) { try parse([UInt8](repeating: 0x41, count: 900)) }
        #expect(throws: TransactionReceiptError.malformedSignature) { try parse(certificate + [0x00]) }
        #expect(throws: TransactionReceiptError.malformedSignature) { try parse(Array(certificate.dropLast())) }
        #expect(throws: TransactionReceiptError.malformedSignature) { try parse([0x02, 0x01, 0x05]) }  // an INTEGER
        // A SEQUENCE claiming a length far beyond the data.
        #expect(throws: TransactionReceiptError.malformedSignature) {
            try parse([0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF, 0x00])
        }
        let huge = [0x30, 0x82, 0x40, 0x01] + [UInt8](repeating: 0x05, count: 0x4001)
        #expect(throws: TransactionReceiptError.tooLarge) { try parse(huge) }
        #expect(throws: TransactionReceiptError.malformedSignature) {
            try TransactionReceiptSignature(
                version: 3,
                signatureBytes: [UInt8](repeating: 1, count: 256),
                leafCertificateDER: huge
            )
        }
    }

    @Test func unusableCertificatesGiveAnInvalidSignatureWithAReason() throws {
        let signed = try Fixtures.signedReceipt(for: Fixtures.consumable)
        let signatureBytes = try #require(signed.signatureBytes)
        func verification(_ certificate: [UInt8]) throws -> TransactionReceiptSignature.Verification {
            try TransactionReceiptSignature(version: 3, signatureBytes: signatureBytes, leafCertificateDER: certificate)
                .verify(purchaseInfo: signed.purchaseInfoBytes)
        }
        // A well-formed DER SEQUENCE that is not a certificate.
        #expect(try verification([0x30, 0x03, 0x02, 0x01, 0x05]) == .invalid(.unreadableCertificate))
        // A real certificate of an EC key.
        let ecKey = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("EC") }
        let ecCertificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(ecKey.publicKey),
            notValidBefore: Date(timeIntervalSince1970: 1_700_000_000),
            notValidAfter: Date(timeIntervalSince1970: 2_000_000_000),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: Certificate.Extensions {},
            issuerPrivateKey: Certificate.PrivateKey(ecKey)
        )
        var serializer = DER.Serializer()
        try serializer.serialize(ecCertificate)
        #expect(try verification(serializer.serializedBytes) == .invalid(.unsupportedPublicKey))
        // Another RSA key's certificate.
        #expect(try verification(Fixtures.otherIdentity2048.certificateDER) == .invalid(.signatureMismatch))
        #expect(try verification(Fixtures.identity2048.certificateDER) == .valid)
    }

    @Test func outerPlistProblemsAreThrownWithTheirCode() throws {
        let signed = try Fixtures.signedReceipt(for: Fixtures.consumable)
        let signature = Self.base64(signed.signature!.bytes)
        let purchaseInfo = Self.base64(signed.purchaseInfoBytes)
        let cases: [(String, TransactionReceiptError)] = [
            ("", .malformedPlist),
            ("!!!!", .invalidBase64),
            ("ewo", .invalidBase64),
            (Data("{\n\t\"signature\" = \"abc".utf8).base64EncodedString(), .malformedPlist),
            (Data("{\"purchase-info\" = \"e30=\";".utf8).base64EncodedString(), .malformedPlist),
            (Data(String(repeating: "{a=", count: 40).utf8).base64EncodedString(), .malformedPlist),
            (Data("(\"a\", \"b\")".utf8).base64EncodedString(), .unexpectedStructure),
            (Self.receipt(["signature": signature, "pod": .string("1")]), .missingPurchaseInfo),
            (Self.receipt(["purchase-info": .array([purchaseInfo])]), .unexpectedStructure),
            (Self.receipt(["purchase-info": purchaseInfo, "extra": .dictionary([])]), .unexpectedStructure),
            (Self.receipt(["purchase-info": .string("not base64!")]), .invalidBase64),
            (Self.receipt(["purchase-info": purchaseInfo, "signature": .string("AAA")]), .invalidBase64),
            (Self.receipt(["purchase-info": purchaseInfo, "signature": .string("")]), .malformedSignature),
            (
                Self.receipt(["purchase-info": purchaseInfo, "signature": Self.base64([4, 1, 2])]),
                .unsupportedSignatureVersion
            ),
            (Self.receipt(["purchase-info": Self.base64(Array("{a=(".utf8))]), .malformedPlist),
            (Self.receipt(["purchase-info": Self.base64(Array("\"a string\"".utf8))]), .unexpectedStructure),
            (Self.receipt(["purchase-info": Self.base64(Array("{a = (b);}".utf8))]), .unexpectedStructure),
            (Self.receipt(["purchase-info": Self.base64(Array("{a=b;a=c;}".utf8))]), .malformedPlist),
            (Self.receipt(["purchase-info": .string("")]), .malformedPlist),
        ]
        for (text, expected) in cases {
            do {
                let receipt = try TransactionReceipt.decode(base64: text)
                Issue.record("decoded \(text.prefix(60)) as \(receipt)")
            } catch {
                #expect(error == expected, "\(text.prefix(60)): \(error)")
                #expect(!error.message.isEmpty)
            }
        }
        // Nesting deeper than the limit inside the purchase-info says so.
        do {
            let deep = String(repeating: "{a=", count: 17) + "b" + String(repeating: ";}", count: 17)
            _ = try TransactionReceipt.decode(base64: Self.receipt(["purchase-info": Self.base64(Array(deep.utf8))]))
            Issue.record("a purchase-info nested 17 deep was accepted")
        } catch {
            #expect(error == .malformedPlist)
            #expect(error.message.contains("tooDeep"))
        }
    }

    @Test func oversizedInputIsRefusedBeforeItIsDecoded() throws {
        let big = String(repeating: "A", count: 200_000)
        #expect(throws: TransactionReceiptError.tooLarge) { try TransactionReceipt.decode(base64: big) }
        let padded = String(repeating: "\n", count: 200_000) + "e30="
        #expect(throws: TransactionReceiptError.tooLarge) { try TransactionReceipt.decode(base64: padded) }
        #expect(throws: TransactionReceiptError.tooLarge) {
            try TransactionReceipt.decode(bytes: [UInt8](repeating: 0x20, count: 64 * 1024 + 1))
        }
        let receipt = try Fixtures.signedReceipt(for: Fixtures.consumable).base64EncodedString()
        #expect(throws: TransactionReceiptError.tooLarge) {
            try TransactionReceipt.decode(base64: receipt, limits: .init(maxBytes: 1024))
        }
        // Transport line breaks are fine.
        let wrapped = stride(from: 0, to: receipt.count, by: 76).map { offset in
            let start = receipt.index(receipt.startIndex, offsetBy: offset)
            return String(
                receipt[start..<(receipt.index(start, offsetBy: 76, limitedBy: receipt.endIndex) ?? receipt.endIndex)]
            )
        }.joined(separator: "\r\n")
        #expect(try TransactionReceipt.decode(base64: wrapped + "\n").isSignatureValid())
    }

    @Test func randomBytesNeverDecodeToAValidReceipt() {
        var generator = SeededGenerator(seed: 0x10_5EED)
        for round in 0..<1_000 {
            let count = Int.random(in: 0...512, using: &generator)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if round % 2 == 0, !bytes.isEmpty { bytes[0] = UInt8(ascii: "{") }
            if let receipt = try? TransactionReceipt.decode(bytes: bytes) {
                #expect(!receipt.isSignatureValid())
            }
            if let receipt = try? TransactionReceipt.decode(base64: Data(bytes).base64EncodedString()) {
                #expect(!receipt.isSignatureValid())
            }
            #expect(throws: (any Error).self) { try TransactionReceiptSignature(bytes: bytes) }
        }
    }

    /// Property: 2,000 random mutations of a valid signed receipt never yield a receipt whose signature
    /// verifies over different purchase content. A quarter mutate the base64 text, a quarter the outer
    /// plist, and half the decoded purchase-info or signature blob (re-encoded, so they reach the crypto).
    @Test func mutationsNeverProduceAValidSignatureOverDifferentContent() throws {
        let original = try Fixtures.signedReceipt(for: Fixtures.subscription)
        let blob = try #require(original.signature).bytes
        var generator = SeededGenerator(seed: 0xBAD_5EED)

        func mutate(_ input: [UInt8]) -> [UInt8] {
            var bytes = input
            for _ in 0..<Int.random(in: 1...3, using: &generator) where !bytes.isEmpty {
                let position = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0...3, using: &generator) {
                case 0: bytes[position] ^= UInt8(1) << UInt8.random(in: 0...7, using: &generator)
                case 1: bytes[position] = UInt8.random(in: 0...255, using: &generator)
                case 2: bytes.remove(at: position)
                default: bytes.insert(bytes[Int.random(in: 0..<bytes.count, using: &generator)], at: position)
                }
            }
            return bytes
        }
        func outer(signature: [UInt8], purchaseInfo: [UInt8]) -> [UInt8] {
            OpenStepPlist.dictionary([
                "signature": Self.base64(signature),
                "purchase-info": Self.base64(purchaseInfo),
                "environment": .string("Sandbox"),
                "pod": .string("100"),
                "signing-status": .string("0"),
            ]).serializedBytes()
        }
        #expect(outer(signature: blob, purchaseInfo: original.purchaseInfoBytes) == original.encodedBytes())

        var decoded = 0
        var decodedPurchaseInfoMutations = 0
        var validAndUnchanged = 0
        for round in 0..<2_000 {
            let result: Result<TransactionReceipt, TransactionReceiptError>
            switch round % 4 {
            case 0:
                let text = String(decoding: mutate(Array(original.base64EncodedString().utf8)), as: UTF8.self)
                result = Result { () throws(TransactionReceiptError) in try TransactionReceipt.decode(base64: text) }
            case 1:
                let bytes = mutate(original.encodedBytes())
                result = Result { () throws(TransactionReceiptError) in try TransactionReceipt.decode(bytes: bytes) }
            case 2:
                let bytes = outer(signature: blob, purchaseInfo: mutate(original.purchaseInfoBytes))
                result = Result { () throws(TransactionReceiptError) in try TransactionReceipt.decode(bytes: bytes) }
            default:
                let bytes = outer(signature: mutate(blob), purchaseInfo: original.purchaseInfoBytes)
                result = Result { () throws(TransactionReceiptError) in try TransactionReceipt.decode(bytes: bytes) }
            }
            guard case .success(let receipt) = result else { continue }
            decoded += 1
            if round % 4 == 2 { decodedPurchaseInfoMutations += 1 }
            if receipt.isSignatureValid() {
                #expect(receipt.purchaseInfoBytes == original.purchaseInfoBytes, "round \(round)")
                #expect(receipt.purchaseInfo == original.purchaseInfo, "round \(round)")
                validAndUnchanged += 1
            }
        }
        // Enough mutations got past decoding for the signature check to be what stopped them.
        #expect(decoded > 300, "only \(decoded) mutations decoded")
        #expect(
            decodedPurchaseInfoMutations > 150,
            "only \(decodedPurchaseInfoMutations) purchase-info mutations decoded"
        )
        #expect(validAndUnchanged < decoded / 2, "\(validAndUnchanged) of \(decoded) still verified")
    }
}
