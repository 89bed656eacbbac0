import Crypto
import _CryptoExtras

/// The parts of a PKCS#7 / CMS SignedData with attached content that receipts use (RFC 5652).
///
/// ```
/// ContentInfo ::= SEQUENCE { contentType OID signedData, content [0] EXPLICIT SignedData }
/// SignedData  ::= SEQUENCE { version INTEGER, digestAlgorithms SET OF AlgorithmIdentifier,
///                  encapContentInfo SEQUENCE { eContentType OID data, eContent [0] EXPLICIT OCTET STRING },
///                  certificates [0] IMPLICIT SET OF Certificate OPTIONAL, crls [1] IMPLICIT OPTIONAL,
///                  signerInfos SET OF SignerInfo }
/// SignerInfo  ::= SEQUENCE { version INTEGER, sid IssuerAndSerialNumber, digestAlgorithm AlgorithmIdentifier,
///                  signedAttrs [0] IMPLICIT SET OF Attribute OPTIONAL, signatureAlgorithm AlgorithmIdentifier,
///                  signature OCTET STRING, unsignedAttrs [1] IMPLICIT OPTIONAL }
/// ```
/// DER and BER (indefinite lengths, constructed OCTET STRING) are both read. Exactly one signer is accepted.
struct PKCS7Container {
    let reader: ASN1Reader
    /// The buffer holding the signed content: the receipt itself, or the joined chunks of a constructed OCTET STRING.
    let contentBuffer: [UInt8]
    /// Where the signed content (the receipt payload) lies in ``contentBuffer``.
    let contentRange: Range<Int>
    var content: ArraySlice<UInt8> { contentBuffer[contentRange] }
    /// The bytes of the `certificates` field: the cache key of the signer and its chain.
    let certificatesField: ArraySlice<UInt8>
    /// Each certificate's DER.
    let certificates: [ArraySlice<UInt8>]
    /// The encoded `sid` (issuer and serial number of the signing certificate).
    let signerIdentifier: ArraySlice<UInt8>
    let digest: DigestAlgorithm
    /// The whole `[0]` signed attributes element, when present.
    let signedAttributes: ASN1Element?
    let signature: ArraySlice<UInt8>

    init(_ bytes: [UInt8], maximumDepth: Int = 32, maximumCertificates: Int = 8) throws(ASN1Error) {
        let reader = ASN1Reader(bytes, maximumDepth: maximumDepth)
        self.reader = reader
        let contentInfo = try reader.element(at: 0, limit: bytes.count, expecting: ASN1Tag.sequence)
        guard contentInfo.end == bytes.count else { throw .trailingData }
        let info = try reader.children(of: contentInfo)
        guard info.count == 2, info[0].identifier == ASN1Tag.objectIdentifier,
            reader.contents(of: info[0], equal: ObjectIdentifierBytes.signedData),
            info[1].identifier == ASN1Tag.context0
        else { throw .unexpectedTag(expected: ASN1Tag.objectIdentifier, found: info.first?.identifier ?? 0) }

        let explicit = try reader.children(of: info[1], depth: 1)
        guard explicit.count == 1, explicit[0].identifier == ASN1Tag.sequence else { throw .unexpectedPrimitive }
        let fields = try reader.children(of: explicit[0], depth: 2)
        guard fields.count >= 4, fields[0].identifier == ASN1Tag.integer, try reader.integer(fields[0]) == 1,
            fields[1].identifier == ASN1Tag.set, fields[2].identifier == ASN1Tag.sequence
        else { throw .unexpectedPrimitive }
        let digestAlgorithms = try reader.children(of: fields[1], depth: 3).map { element throws(ASN1Error) in
            try Self.algorithm(element, reader, depth: 4)
        }

        // encapContentInfo: data, with the content attached.
        let encapsulated = try reader.children(of: fields[2], depth: 3)
        guard encapsulated.count == 2, encapsulated[0].identifier == ASN1Tag.objectIdentifier,
            reader.contents(of: encapsulated[0], equal: ObjectIdentifierBytes.data),
            encapsulated[1].identifier == ASN1Tag.context0
        else { throw .unexpectedPrimitive }
        let wrapped = try reader.children(of: encapsulated[1], depth: 4)
        guard wrapped.count == 1 else { throw .unexpectedPrimitive }
        (contentBuffer, contentRange) = try reader.octetStringLocation(wrapped[0], depth: 5)

        // certificates [0], crls [1], then the signer infos.
        var index = 3
        var certificatesField: ArraySlice<UInt8> = []
        var certificates: [ArraySlice<UInt8>] = []
        if fields[index].identifier == ASN1Tag.context0 {
            certificatesField = reader.encoding(of: fields[index])
            let embedded = try reader.children(of: fields[index], depth: 3)
            // Apple embeds two (leaf and intermediate), Xcode one; each costs a certificate decode before the cache.
            guard embedded.count <= maximumCertificates else { throw .tooManyCertificates(limit: maximumCertificates) }
            for certificate in embedded {
                guard certificate.identifier == ASN1Tag.sequence, !certificate.isIndefinite else {
                    throw .unexpectedPrimitive
                }
                certificates.append(reader.encoding(of: certificate))
            }
            index += 1
        }
        if index < fields.count, fields[index].identifier == ASN1Tag.context1 { index += 1 }
        guard index == fields.count - 1, fields[index].identifier == ASN1Tag.set else { throw .trailingData }
        self.certificatesField = certificatesField
        self.certificates = certificates

        let signers = try reader.children(of: fields[index], depth: 3)
        guard signers.count == 1, signers[0].identifier == ASN1Tag.sequence else { throw .unexpectedPrimitive }
        let signer = try reader.children(of: signers[0], depth: 4)
        guard signer.count >= 5, signer[0].identifier == ASN1Tag.integer, try reader.integer(signer[0]) == 1,
            signer[1].identifier == ASN1Tag.sequence, signer[2].identifier == ASN1Tag.sequence
        else { throw .unexpectedPrimitive }
        signerIdentifier = reader.encoding(of: signer[1])
        let digestAlgorithm = try Self.algorithm(signer[2], reader, depth: 5)
        var next = 3
        if signer[next].identifier == ASN1Tag.context0 {
            guard !signer[next].isIndefinite else { throw .invalidLength }
            signedAttributes = signer[next]
            next += 1
        } else {
            signedAttributes = nil
        }
        guard next + 1 < signer.count, signer[next].identifier == ASN1Tag.sequence else { throw .unexpectedPrimitive }
        let signatureAlgorithm = try Self.algorithm(signer[next], reader, depth: 5)
        signature = try reader.octetString(signer[next + 1], depth: 5)
        guard next + 2 == signer.count || (next + 3 == signer.count && signer[next + 2].identifier == ASN1Tag.context1)
        else { throw .trailingData }

        guard let digest = DigestAlgorithm(digestOID: digestAlgorithm),
            digest.accepts(signatureAlgorithm: signatureAlgorithm)
        else { throw .unsupportedAlgorithm }
        // The signer's digest must be among those the SignedData announces.
        guard digestAlgorithms.contains(digestAlgorithm) else { throw .unsupportedAlgorithm }
        self.digest = digest
    }

    private static func algorithm(_ element: ASN1Element, _ reader: ASN1Reader, depth: Int) throws(ASN1Error)
        -> ArraySlice<UInt8>
    {
        guard element.identifier == ASN1Tag.sequence else {
            throw .unexpectedTag(expected: ASN1Tag.sequence, found: element.identifier)
        }
        let parts = try reader.children(of: element, depth: depth)
        guard let oid = parts.first, oid.identifier == ASN1Tag.objectIdentifier, parts.count <= 2 else {
            throw .unexpectedPrimitive
        }
        // Parameters are absent or NULL for the digest and RSA algorithms.
        if parts.count == 2, parts[1].identifier != ASN1Tag.null || parts[1].contentLength != 0 {
            throw .unexpectedPrimitive
        }
        return reader[oid]
    }

    /// Whether the signature over the content (or over the signed attributes, which must then carry the
    /// content's digest) verifies with `key`.
    func isSignatureValid(key: _RSA.Signing.PublicKey) -> Bool {
        switch digest {
        case .sha1: isSignatureValid(key: key, hash: Insecure.SHA1.self)
        case .sha256: isSignatureValid(key: key, hash: SHA256.self)
        case .sha384: isSignatureValid(key: key, hash: SHA384.self)
        case .sha512: isSignatureValid(key: key, hash: SHA512.self)
        }
    }

    private func isSignatureValid<Hash: HashFunction>(key: _RSA.Signing.PublicKey, hash: Hash.Type) -> Bool {
        let signature = _RSA.Signing.RSASignature(rawRepresentation: self.signature)
        let contentDigest = Hash.hash(data: content)
        guard let attributes = signedAttributes else {
            return key.isValidSignature(signature, for: contentDigest, padding: .insecurePKCS1v1_5)
        }
        guard attributesConfirm(contentDigest: Array(contentDigest), attributes) else { return false }
        // The signature covers the attributes encoded as a SET (tag 0x31), not as [0] IMPLICIT.
        var encoded = Array(reader.encoding(of: attributes))
        encoded[0] = ASN1Tag.set
        return key.isValidSignature(signature, for: Hash.hash(data: encoded), padding: .insecurePKCS1v1_5)
    }

    /// The signed attributes must say the content is `data` and carry its digest, each exactly once.
    private func attributesConfirm(contentDigest: [UInt8], _ attributes: ASN1Element) -> Bool {
        guard let list = try? reader.children(of: attributes, depth: 5) else { return false }
        var sawType = false
        var sawDigest = false
        for attribute in list {
            guard let parts = try? reader.children(of: attribute, depth: 6), parts.count == 2,
                parts[0].identifier == ASN1Tag.objectIdentifier, parts[1].identifier == ASN1Tag.set,
                let values = try? reader.children(of: parts[1], depth: 7), values.count == 1
            else { return false }
            if reader.contents(of: parts[0], equal: ObjectIdentifierBytes.contentTypeAttribute) {
                guard !sawType, values[0].identifier == ASN1Tag.objectIdentifier,
                    reader.contents(of: values[0], equal: ObjectIdentifierBytes.data)
                else { return false }
                sawType = true
            } else if reader.contents(of: parts[0], equal: ObjectIdentifierBytes.messageDigestAttribute) {
                guard !sawDigest, values[0].identifier == ASN1Tag.octetString,
                    reader.contents(of: values[0], equal: contentDigest)
                else { return false }
                sawDigest = true
            }
        }
        return sawType && sawDigest
    }
}

/// The digest algorithms a receipt signature may use.
enum DigestAlgorithm: Sendable, Hashable {
    case sha1, sha256, sha384, sha512

    init?(digestOID: ArraySlice<UInt8>) {
        switch Array(digestOID) {
        case ObjectIdentifierBytes.sha1: self = .sha1
        case ObjectIdentifierBytes.sha256: self = .sha256
        case ObjectIdentifierBytes.sha384: self = .sha384
        case ObjectIdentifierBytes.sha512: self = .sha512
        default: return nil
        }
    }

    var oid: [UInt8] {
        switch self {
        case .sha1: ObjectIdentifierBytes.sha1
        case .sha256: ObjectIdentifierBytes.sha256
        case .sha384: ObjectIdentifierBytes.sha384
        case .sha512: ObjectIdentifierBytes.sha512
        }
    }

    var rsaSignatureOID: [UInt8] {
        switch self {
        case .sha1: ObjectIdentifierBytes.sha1WithRSA
        case .sha256: ObjectIdentifierBytes.sha256WithRSA
        case .sha384: ObjectIdentifierBytes.sha384WithRSA
        case .sha512: ObjectIdentifierBytes.sha512WithRSA
        }
    }

    /// Apple signs with plain `rsaEncryption` (the digest named by the signer) and Xcode with
    /// `sha256WithRSAEncryption`; a combined algorithm must name the same digest.
    func accepts(signatureAlgorithm oid: ArraySlice<UInt8>) -> Bool {
        let oid = Array(oid)
        return oid == ObjectIdentifierBytes.rsaEncryption || oid == rsaSignatureOID
    }
}
