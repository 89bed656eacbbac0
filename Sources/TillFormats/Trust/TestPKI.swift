import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// A signing authority of three certificates (root, intermediate, leaf) with the leaf's private key,
/// shaped like Apple's: the simulator signs with one, tests build them, verifiers trust its root.
public struct SigningAuthority: Sendable {
    public var root: Certificate
    public var intermediate: Certificate
    public var leaf: Certificate
    /// The key that signs receipts or JWS.
    public var leafKey: SigningKey

    /// Leaf first, as in `x5c` and in a receipt's certificate set.
    public var chain: [Certificate] { [leaf, intermediate, root] }

    /// Trust anchors holding only this authority's root.
    public var anchors: TrustAnchors { TrustAnchors(roots: [root]) }

    public init(root: Certificate, intermediate: Certificate, leaf: Certificate, leafKey: SigningKey) {
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
        self.leafKey = leafKey
    }
}

/// A private key that signs App Store data.
public enum SigningKey: Sendable {
    /// ES256 for JWS.
    case p256(P256.Signing.PrivateKey)
    /// RSA PKCS#1 v1.5 for receipts.
    case rsa(_RSA.Signing.PrivateKey)

    /// The key as swift-certificates wants it for issuing certificates.
    public var certificateKey: Certificate.PrivateKey {
        switch self {
        case .p256(let key): Certificate.PrivateKey(key)
        case .rsa(let key): Certificate.PrivateKey(key)
        }
    }

    public var p256: P256.Signing.PrivateKey? {
        if case .p256(let key) = self { return key }
        return nil
    }

    public var rsa: _RSA.Signing.PrivateKey? {
        if case .rsa(let key) = self { return key }
        return nil
    }
}

/// Builds certificate chains with Apple's marker extensions, for tests and for the App Store simulator.
public enum TestPKI {
    /// The key type of a chain.
    public enum KeyKind: Sendable {
        /// ECDSA P-256 throughout: StoreKit 2 JWS.
        case p256
        /// RSA-2048 throughout: app receipts and iOS 6-style transaction receipts.
        case rsa2048
    }

    /// Makes a root, a WWDR-like intermediate (OID 1.2.840.113635.100.6.2.1) and a receipt-signing leaf
    /// (OID 1.2.840.113635.100.6.11.1).
    ///
    /// - Parameters:
    ///   - name: put in each subject's organization, so chains of different authorities differ.
    ///   - validFrom: start of every certificate's validity.
    ///   - years: validity of the leaf; the intermediate and root last longer.
    public static func makeAuthority(
        kind: KeyKind,
        name: String = "Till Test",
        validFrom: Date = Date(timeIntervalSince1970: 1_600_000_000),
        years: Int = 30,
        leafMarker: ASN1ObjectIdentifier = AppleOID.receiptSigning,
        intermediateMarker: ASN1ObjectIdentifier = AppleOID.wwdrIntermediate
    ) throws -> SigningAuthority {
        let rootKey = try makeKey(kind).certificateKey
        let intermediateKey = try makeKey(kind).certificateKey
        let leafSigningKey = try makeKey(kind)
        let leafKey = leafSigningKey.certificateKey
        let year: TimeInterval = 365.25 * 86_400
        let signature: Certificate.SignatureAlgorithm = kind == .p256 ? .ecdsaWithSHA256 : .sha256WithRSAEncryption

        let rootName = try distinguishedName("\(name) Root CA", organization: name)
        let intermediateName = try distinguishedName("\(name) Worldwide Developer Relations CA", organization: name)
        let leafName = try distinguishedName("\(name) Receipt Signing", organization: name)

        let root = try Certificate(
            version: .v3,
            serialNumber: positiveSerial(),
            publicKey: rootKey.publicKey,
            notValidBefore: validFrom,
            notValidAfter: validFrom + Double(years + 10) * year,
            issuer: rootName,
            subject: rootName,
            signatureAlgorithm: signature,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: rootKey.publicKey)
            },
            issuerPrivateKey: rootKey
        )
        let intermediate = try Certificate(
            version: .v3,
            serialNumber: positiveSerial(),
            publicKey: intermediateKey.publicKey,
            notValidBefore: validFrom,
            notValidAfter: validFrom + Double(years + 5) * year,
            issuer: rootName,
            subject: intermediateName,
            signatureAlgorithm: signature,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: intermediateKey.publicKey)
                AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: rootKey.publicKey).keyIdentifier)
                Certificate.Extension(oid: intermediateMarker, critical: false, value: [ASN1Tag.null, 0x00])
            },
            issuerPrivateKey: rootKey
        )
        let leaf = try Certificate(
            version: .v3,
            serialNumber: positiveSerial(),
            publicKey: leafKey.publicKey,
            notValidBefore: validFrom,
            notValidAfter: validFrom + Double(years) * year,
            issuer: intermediateName,
            subject: leafName,
            signatureAlgorithm: signature,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                AuthorityKeyIdentifier(
                    keyIdentifier: SubjectKeyIdentifier(hash: intermediateKey.publicKey).keyIdentifier
                )
                Certificate.Extension(oid: leafMarker, critical: false, value: [ASN1Tag.null, 0x00])
            },
            issuerPrivateKey: intermediateKey
        )
        return SigningAuthority(root: root, intermediate: intermediate, leaf: leaf, leafKey: leafSigningKey)
    }

    /// A self-signed certificate for `key`, like Xcode's StoreKit test certificate.
    public static func makeSelfSigned(
        key: Certificate.PrivateKey,
        commonName: String,
        validFrom: Date,
        validUntil: Date
    ) throws -> Certificate {
        let name = try distinguishedName(commonName, organization: commonName)
        let signature: Certificate.SignatureAlgorithm =
            if case .some = P256.Signing.PublicKey(key.publicKey) { .ecdsaWithSHA256 } else { .sha256WithRSAEncryption }
        return try Certificate(
            version: .v3,
            serialNumber: positiveSerial(),
            publicKey: key.publicKey,
            notValidBefore: validFrom,
            notValidAfter: validUntil,
            issuer: name,
            subject: name,
            signatureAlgorithm: signature,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
            },
            issuerPrivateKey: key
        )
    }

    /// A random positive 16-byte serial (swift-certificates' default may set the sign bit).
    private static func positiveSerial() -> Certificate.SerialNumber {
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255) }
        bytes[0] = bytes[0] & 0x7F | 0x01
        return Certificate.SerialNumber(bytes: bytes)
    }

    private static func makeKey(_ kind: KeyKind) throws -> SigningKey {
        switch kind {
        case .p256: .p256(P256.Signing.PrivateKey())
        case .rsa2048: .rsa(try _RSA.Signing.PrivateKey(keySize: .bits2048))
        }
    }

    private static func distinguishedName(_ commonName: String, organization: String) throws -> DistinguishedName {
        try DistinguishedName {
            CountryName("US")
            OrganizationName(organization)
            OrganizationalUnitName("\(organization) Certification Authority")
            CommonName(commonName)
        }
    }
}

extension SubjectKeyIdentifier {
    /// The SHA-1 of the subject public key bytes (RFC 5280 §4.2.1.2 method 1).
    init(hash key: Certificate.PublicKey) {
        self.init(keyIdentifier: ArraySlice(Insecure.SHA1.hash(data: key.subjectPublicKeyInfoBytes)))
    }
}
