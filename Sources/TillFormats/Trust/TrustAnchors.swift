import Foundation
import SwiftASN1
import X509

/// The certificates a verifier trusts: roots, plus intermediates for formats that carry only their leaf
/// (iOS 6-style transaction receipts).
public struct TrustAnchors: Sendable {
    public var roots: [Certificate]
    public var intermediates: [Certificate]

    public init(roots: [Certificate], intermediates: [Certificate] = []) {
        self.roots = roots
        self.intermediates = intermediates
    }

    /// Apple Root CA - G3: the anchor of StoreKit 2 signed transactions, renewal info and notifications.
    public static let appleRootCAG3 = try! Certificate(derEncoded: decodeBuiltIn(AppleCertificateData.appleRootCAG3))
    /// Apple Inc. Root: the anchor of app receipts and iOS 6-style transaction receipts.
    public static let appleIncRoot = try! Certificate(derEncoded: decodeBuiltIn(AppleCertificateData.appleIncRoot))
    /// Apple's Worldwide Developer Relations intermediates that have signed receipts (2008, 2013, G5, G7).
    public static let appleWWDRIntermediates: [Certificate] = [
        AppleCertificateData.wwdr2008, AppleCertificateData.wwdr2013, AppleCertificateData.wwdrG5,
        AppleCertificateData.wwdrG7,
    ].map { try! Certificate(derEncoded: decodeBuiltIn($0)) }

    /// What StoreKit 2 signed data is checked against by default.
    public static let appleStoreKit = TrustAnchors(roots: [appleRootCAG3])
    /// What receipts are checked against by default.
    public static let appleReceipts = TrustAnchors(roots: [appleIncRoot], intermediates: appleWWDRIntermediates)

    private static func decodeBuiltIn(_ base64: String) -> [UInt8] {
        Base64.decode(base64, alphabet: .standard)!
    }

    /// Reads certificates from DER or PEM bytes (a PEM file may hold several).
    public static func certificates(fromFile bytes: [UInt8]) throws -> [Certificate] {
        let text = String(decoding: bytes, as: UTF8.self)
        if text.contains("-----BEGIN CERTIFICATE-----") {
            return try PEMDocument.parseMultiple(pemString: text).map { try Certificate(pemDocument: $0) }
        }
        return [try Certificate(derEncoded: bytes)]
    }
}

/// Apple's object identifiers that mark the purpose of a certificate in its chains.
public enum AppleOID {
    /// Worldwide Developer Relations intermediate (receipts, StoreKit 2 signing).
    public static let wwdrIntermediate: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    /// Apple iTunes Store Certification Authority (iOS 6-style receipts, version 2).
    public static let iTunesStoreIntermediate: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 2]
    /// Mac App Store and iTunes Store receipt signing (app receipts, StoreKit 2 leaves).
    public static let receiptSigning: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    /// iTunes Store purchase receipt certificate (iOS 6-style receipts, version 2).
    public static let purchaseReceiptSigning: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 5, 1]
}

/// Which marker extensions a chain of one format must carry.
public struct ChainRequirements: Sendable, Hashable {
    /// The leaf must carry one of these.
    public var leafMarkers: [ASN1ObjectIdentifier]
    /// The intermediate must carry one of these.
    public var intermediateMarkers: [ASN1ObjectIdentifier]

    public init(leafMarkers: [ASN1ObjectIdentifier], intermediateMarkers: [ASN1ObjectIdentifier]) {
        self.leafMarkers = leafMarkers
        self.intermediateMarkers = intermediateMarkers
    }

    /// StoreKit 2 JWS and app receipts: receipt-signing leaf under a WWDR intermediate.
    public static let receiptSigning = ChainRequirements(
        leafMarkers: [AppleOID.receiptSigning],
        intermediateMarkers: [AppleOID.wwdrIntermediate]
    )
    /// iOS 6-style transaction receipts: either generation of Apple's transaction receipt chain.
    public static let transactionReceipt = ChainRequirements(
        leafMarkers: [AppleOID.receiptSigning, AppleOID.purchaseReceiptSigning],
        intermediateMarkers: [AppleOID.wwdrIntermediate, AppleOID.iTunesStoreIntermediate]
    )
}

/// Requires Apple's marker extensions on leaf and intermediate (their presence; the value is NULL).
///
/// A chain of one certificate means the leaf itself is a configured root (Xcode's StoreKit test
/// certificate, trusted explicitly): it carries no markers and is accepted as configured, including the
/// critical extended key usage (code signing) Xcode puts on it. Apple's own chains carry none.
struct AppleMarkerPolicy: VerifierPolicy {
    var requirements: ChainRequirements

    var verifyingCriticalExtensions: [ASN1ObjectIdentifier] {
        requirements.leafMarkers + requirements.intermediateMarkers + [.X509ExtensionID.extendedKeyUsage]
    }

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        if chain.count == 1 { return .meetsPolicy }
        if chain.contains(where: { $0.extensions[oid: .X509ExtensionID.extendedKeyUsage]?.critical == true }) {
            return .failsToMeetPolicy(
                reason: "a certificate of the chain restricts its use with a critical extended key usage"
            )
        }
        guard chain.count == 3 else {
            return .failsToMeetPolicy(reason: "expected leaf, intermediate and root, found \(chain.count) certificates")
        }
        let leaf = chain[0]
        let intermediate = chain[1]
        guard requirements.leafMarkers.contains(where: { leaf.extensions[oid: $0] != nil }) else {
            return .failsToMeetPolicy(reason: "the leaf certificate lacks Apple's signing marker extension")
        }
        guard requirements.intermediateMarkers.contains(where: { intermediate.extensions[oid: $0] != nil }) else {
            return .failsToMeetPolicy(reason: "the intermediate certificate lacks Apple's marker extension")
        }
        return .meetsPolicy
    }
}
