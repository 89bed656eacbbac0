import Crypto
import SwiftASN1

/// The binary `signature` of an iOS 6-style transaction receipt (after base64 decoding):
///
/// | bytes | content |
/// |---|---|
/// | 1 | version: 2 or 3 |
/// | 128 (v2) / 256 (v3) | RSA PKCS #1 v1.5 signature with SHA-1 over `version ‖ purchase-info` |
/// | 4 | certificate length, big-endian |
/// | n | the DER leaf certificate |
///
/// Parsing is strict: the lengths must add up to the blob exactly and the certificate must be
/// exactly one DER element. The signed `purchase-info` bytes are the inner plist after base64 decoding.
public struct TransactionReceiptSignature: Sendable, Hashable {
    /// 2 (RSA-1024 `PurchaseReceiptCertificate`) or 3 (RSA-2048 `Mac App Store and iTunes Store Receipt Signing`).
    public let version: UInt8
    /// The raw RSA signature: 128 bytes for version 2, 256 for version 3.
    public let signatureBytes: [UInt8]
    /// The signer's certificate, DER encoded. Its chain to Apple's root is not checked here.
    public let leafCertificateDER: [UInt8]

    /// The largest leaf certificate accepted (Apple's are about 0.9–1.4 KB).
    public static let maximumCertificateLength = 16 * 1024

    /// The signature length a version implies, or nil for an unknown version.
    public static func signatureLength(forVersion version: UInt8) -> Int? {
        switch version {
        case 2: 128
        case 3: 256
        default: nil
        }
    }

    /// The bytes the signature covers: the version byte followed by the decoded purchase-info.
    public static func signedMessage(version: UInt8, purchaseInfo: some Collection<UInt8>) -> [UInt8] {
        var message: [UInt8] = [version]
        message.reserveCapacity(1 + purchaseInfo.count)
        message.append(contentsOf: purchaseInfo)
        return message
    }

    /// Assembles a signature from its parts, checking them as ``init(bytes:)`` does.
    public init(version: UInt8, signatureBytes: [UInt8], leafCertificateDER: [UInt8]) throws(TransactionReceiptError) {
        guard let expected = Self.signatureLength(forVersion: version) else {
            throw .unsupportedSignatureVersion.with("signature version \(version); only 2 and 3 exist")
        }
        guard signatureBytes.count == expected else {
            throw .malformedSignature.with(
                "a version \(version) signature has \(expected) bytes, this one has \(signatureBytes.count)"
            )
        }
        guard !leafCertificateDER.isEmpty, leafCertificateDER.count <= Self.maximumCertificateLength else {
            throw .malformedSignature.with(
                "the certificate has \(leafCertificateDER.count) bytes; 1 to \(Self.maximumCertificateLength) are accepted"
            )
        }
        let node: ASN1Node
        do {
            node = try DER.parse(leafCertificateDER)
        } catch {
            throw .malformedSignature.with("the certificate is not exactly one DER element: \(error)")
        }
        guard node.identifier == .sequence else {
            throw .malformedSignature.with("the certificate is not a DER SEQUENCE")
        }
        self.version = version
        self.signatureBytes = signatureBytes
        self.leafCertificateDER = leafCertificateDER
    }

    /// Parses the binary blob.
    public init(bytes: some Collection<UInt8>) throws(TransactionReceiptError) {
        let largest = 1 + 256 + 4 + Self.maximumCertificateLength
        guard bytes.count <= largest else {
            throw .tooLarge.with("the signature blob has \(bytes.count) bytes, more than \(largest)")
        }
        let blob = Array(bytes)
        guard let version = blob.first else { throw .malformedSignature.with("the signature blob is empty") }
        guard let length = Self.signatureLength(forVersion: version) else {
            throw .unsupportedSignatureVersion.with("signature version \(version); only 2 and 3 exist")
        }
        let certificateStart = 1 + length + 4
        guard blob.count >= certificateStart else {
            throw .malformedSignature.with(
                "a version \(version) blob needs at least \(certificateStart) bytes, this one has \(blob.count)"
            )
        }
        let declared = blob[(1 + length)..<certificateStart].reduce(0) { $0 << 8 | Int($1) }
        guard declared == blob.count - certificateStart else {
            throw .malformedSignature.with(
                "the blob declares a \(declared)-byte certificate but holds \(blob.count - certificateStart) bytes after the length"
            )
        }
        try self.init(
            version: version,
            signatureBytes: Array(blob[1..<(1 + length)]),
            leafCertificateDER: Array(blob[certificateStart...])
        )
    }

    /// The binary blob: version, signature, big-endian certificate length, certificate.
    public var bytes: [UInt8] {
        let length = UInt32(leafCertificateDER.count)
        var blob: [UInt8] = [version]
        blob.reserveCapacity(1 + signatureBytes.count + 4 + leafCertificateDER.count)
        blob.append(contentsOf: signatureBytes)
        blob.append(contentsOf: [
            UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF),
        ])
        blob.append(contentsOf: leafCertificateDER)
        return blob
    }
}
