import Crypto
import Foundation
import SwiftASN1
import TillCore
import TillFormats
import X509
import _CryptoExtras

/// Shared material for the iOS 6-style receipt tests: Apple's vectors (read in place, never copied),
/// throwaway signing identities, and a seeded random generator.
enum TransactionReceiptFixtures {
    /// `shared/reference/apple-vectors`, found next to the repository this file is in.
    static let vectorsDirectory: URL = Vectors.root

    static let t6V3Path = "third-party/misc/koenrh-apple_receipt-valid_receipt.txt"
    static let t6V2Path = "third-party/AppReceiptValidator/deprecatedSinglesTypeExpiredAppleCert_receipt.b64"
    static let legacyMockPath = "apple-library/mock_signed_data/legacyTransaction"

    /// Whether the vectors are present; tests that need them are skipped otherwise.
    static let vectorsAvailable: Bool = [t6V3Path, t6V2Path, legacyMockPath].allSatisfy {
        FileManager.default.fileExists(atPath: vectorsDirectory.appendingPathComponent($0).path)
    }

    /// A vector's text with surrounding whitespace removed.
    static func vector(_ path: String) throws -> String {
        let url = vectorsDirectory.appendingPathComponent(path)
        return try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// An RSA key and a self-signed certificate for it.
    struct SigningIdentity: Sendable {
        var privateKey: _RSA.Signing.PrivateKey
        var certificateDER: [UInt8]
    }

    /// A 2048-bit identity for version 3 signatures (generated once per test run).
    static let identity2048: SigningIdentity = makeIdentity(bits: 2048, commonName: "Till Test Receipt Signing")
    /// A second, unrelated 2048-bit identity.
    static let otherIdentity2048: SigningIdentity = makeIdentity(bits: 2048, commonName: "Till Other Signer")
    /// A 1024-bit identity for version 2 signatures.
    static let identity1024: SigningIdentity = makeIdentity(
        bits: 1024,
        commonName: "Till Test PurchaseReceiptCertificate"
    )

    static func makeIdentity(bits: Int, commonName: String) -> SigningIdentity {
        do {
            let key =
                bits >= 2048
                ? try _RSA.Signing.PrivateKey(keySize: _RSA.Signing.KeySize(bitCount: bits))
                : try _RSA.Signing.PrivateKey(unsafeKeySize: _RSA.Signing.KeySize(bitCount: bits))
            let name = try DistinguishedName {
                CommonName(commonName)
                OrganizationName("Till Tests")
            }
            let certificate = try Certificate(
                version: .v3,
                serialNumber: Certificate.SerialNumber(),
                publicKey: Certificate.PublicKey(key.publicKey),
                notValidBefore: Date(timeIntervalSince1970: 1_700_000_000),
                notValidAfter: Date(timeIntervalSince1970: 2_000_000_000),
                issuer: name,
                subject: name,
                signatureAlgorithm: .sha256WithRSAEncryption,
                extensions: Certificate.Extensions {},
                issuerPrivateKey: Certificate.PrivateKey(key)
            )
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return SigningIdentity(privateKey: key, certificateDER: serializer.serializedBytes)
        } catch {
            fatalError("cannot make a test identity: \(error)")
        }
    }

    /// A UTC instant from its calendar fields.
    static func utc(_ year: Int, _ month: Int, _ day: Int, _ hour: Int, _ minute: Int, _ second: Int) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        return calendar.date(from: components)!
    }

    /// An auto-renewable subscription bought in winter (PST) that expires in summer (PDT).
    static let subscription = PurchaseTransaction(
        transactionId: "2000000123456789",
        originalTransactionId: "2000000100000001",
        productId: "com.example.till.monthly",
        bundleId: "com.example.till",
        productType: .autoRenewable,
        quantity: 1,
        purchaseDate: utc(2024, 1, 15, 12, 34, 56),
        originalPurchaseDate: utc(2023, 12, 24, 7, 5, 9),
        expiresDate: utc(2024, 7, 15, 12, 0, 0),
        webOrderLineItemId: "2000000077777777",
        isTrialPeriod: false,
        isInIntroOfferPeriod: true,
        environment: .sandbox
    )

    /// A consumable bought in production.
    static let consumable = PurchaseTransaction(
        transactionId: "160000999000111",
        productId: "com.example.till.coins100",
        bundleId: "com.example.till",
        quantity: 3,
        purchaseDate: utc(2023, 8, 1, 23, 59, 59),
        originalPurchaseDate: utc(2023, 8, 1, 23, 59, 59),
        environment: .production
    )

    static func purchaseInfo(for transaction: PurchaseTransaction) -> TransactionReceipt.PurchaseInfo {
        TransactionReceipt.PurchaseInfo(
            transaction: transaction,
            bundleVersion: "42",
            itemId: "1190360447",
            appItemId: "947936149",
            versionExternalIdentifier: "825366855",
            uniqueIdentifier: "fed543dc24065fa2ab23ef08b0b44c0a0c9ed375",
            uniqueVendorIdentifier: "D895D8DB-AEDF-4530-B7E5-E0C9A9A394B6"
        )
    }

    /// A version 3 receipt for `transaction`, signed with ``identity2048``.
    static func signedReceipt(for transaction: PurchaseTransaction, pod: String = "100") throws -> TransactionReceipt {
        try TransactionReceipt.sign(
            purchaseInfo: purchaseInfo(for: transaction),
            environment: transaction.environment,
            pod: pod,
            privateKey: identity2048.privateKey,
            certificateDER: identity2048.certificateDER
        )
    }
}

/// SplitMix64: a small seeded generator so property-style tests are reproducible.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
