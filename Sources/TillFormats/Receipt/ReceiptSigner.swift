import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// Signs app receipts as PKCS#7 SignedData with the payload attached, as the App Store or Xcode does.
public struct ReceiptSigner: Sendable {
    /// The byte layout of the container.
    public enum Layout: Sendable, Hashable {
        /// The App Store's: DER, a primitive OCTET STRING, `rsaEncryption` as signature algorithm.
        case appStore
        /// Xcode's: BER with indefinite lengths, a constructed OCTET STRING, `sha256WithRSAEncryption`.
        case xcode
    }

    /// The digest of the signature (SHA-1 receipts until 2023, SHA-256 since).
    public enum Digest: Sendable, Hashable {
        case sha1, sha256
    }

    private let key: _RSA.Signing.PrivateKey
    private let certificates: [[UInt8]]
    private let issuer: [UInt8]
    private let serialNumber: [UInt8]
    public var layout: Layout
    public var digest: Digest
    /// Sign content-type, signing-time and message-digest attributes instead of the content directly.
    public var signedAttributes: Bool

    /// - Parameter certificates: the signing leaf first, then the rest of the chain to embed.
    public init(
        key: _RSA.Signing.PrivateKey,
        certificates: [Certificate],
        digest: Digest = .sha256,
        layout: Layout = .appStore,
        signedAttributes: Bool = false
    ) throws {
        self.key = key
        self.certificates = try certificates.map { certificate in
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return serializer.serializedBytes
        }
        var serializer = DER.Serializer()
        try serializer.serialize(certificates[0].issuer)
        self.issuer = serializer.serializedBytes
        self.serialNumber = Array(certificates[0].serialNumber.bytes)
        self.digest = digest
        self.layout = layout
        self.signedAttributes = signedAttributes
    }

    /// Signs a receipt's payload.
    public func sign(_ receipt: AppReceipt, signingTime: Date = Date()) throws -> [UInt8] {
        try sign(payload: receipt.payloadDER(), signingTime: signingTime)
    }

    /// Signs payload bytes as they are.
    public func sign(payload: [UInt8], signingTime: Date = Date()) throws -> [UInt8] {
        let algorithm: DigestAlgorithm = digest == .sha1 ? .sha1 : .sha256
        let attributes =
            signedAttributes ? signedAttributesDER(payload: payload, signingTime: signingTime, algorithm) : nil
        let signature = try sign(attributes ?? payload, algorithm)

        var writer = ASN1Writer(indefinite: layout == .xcode)
        writer.constructed(ASN1Tag.sequence) { contentInfo in
            contentInfo.objectIdentifier(ObjectIdentifierBytes.signedData)
            contentInfo.constructed(ASN1Tag.context0) { explicit in
                explicit.constructed(ASN1Tag.sequence) { signedData in
                    signedData.integer(1)
                    signedData.constructed(ASN1Tag.set) { $0.algorithm(algorithm.oid) }
                    signedData.constructed(ASN1Tag.sequence) { encapsulated in
                        encapsulated.objectIdentifier(ObjectIdentifierBytes.data)
                        encapsulated.constructed(ASN1Tag.context0) { content in
                            if layout == .xcode {
                                content.constructed(ASN1Tag.octetString | 0x20) {
                                    $0.primitive(ASN1Tag.octetString, payload)
                                }
                            } else {
                                content.primitive(ASN1Tag.octetString, payload)
                            }
                        }
                    }
                    signedData.constructed(ASN1Tag.context0) { set in
                        for certificate in certificates { set.raw(certificate) }
                    }
                    signedData.constructed(ASN1Tag.set) { signers in
                        signers.constructed(ASN1Tag.sequence) { signer in
                            signer.integer(1)
                            signer.definite(ASN1Tag.sequence) { identifier in
                                identifier.raw(issuer)
                                identifier.primitive(ASN1Tag.integer, serialNumber)
                            }
                            signer.algorithm(algorithm.oid)
                            if var attributes {
                                attributes[0] = ASN1Tag.context0
                                signer.raw(attributes)
                            }
                            signer.algorithm(
                                layout == .xcode ? algorithm.rsaSignatureOID : ObjectIdentifierBytes.rsaEncryption
                            )
                            signer.primitive(ASN1Tag.octetString, signature)
                        }
                    }
                }
            }
        }
        return writer.bytes
    }

    private func signedAttributesDER(payload: [UInt8], signingTime: Date, _ algorithm: DigestAlgorithm) -> [UInt8] {
        func attribute(_ oid: [UInt8], _ value: (inout ASN1Writer) -> Void) -> [UInt8] {
            var writer = ASN1Writer()
            writer.constructed(ASN1Tag.sequence) { sequence in
                sequence.objectIdentifier(oid)
                sequence.constructed(ASN1Tag.set, value)
            }
            return writer.bytes
        }
        let digest: [UInt8] =
            algorithm == .sha1 ? Array(Insecure.SHA1.hash(data: payload)) : Array(SHA256.hash(data: payload))
        // YYYY-MM-DDTHH:MM:SSZ → UTCTime YYMMDDHHMMSSZ
        let time = Array(ReceiptDate.formatRFC3339(signingTime).utf8)
        var utcTime: [UInt8] = []
        for range in [2..<4, 5..<7, 8..<10, 11..<13, 14..<16, 17..<19] { utcTime += time[range] }
        utcTime.append(UInt8(ascii: "Z"))
        var writer = ASN1Writer()
        writer.setOf([
            attribute(ObjectIdentifierBytes.contentTypeAttribute) { $0.objectIdentifier(ObjectIdentifierBytes.data) },
            attribute(ObjectIdentifierBytes.signingTimeAttribute) { $0.primitive(0x17, utcTime) },
            attribute(ObjectIdentifierBytes.messageDigestAttribute) { $0.primitive(ASN1Tag.octetString, digest) },
        ])
        return writer.bytes
    }

    private func sign(_ bytes: [UInt8], _ algorithm: DigestAlgorithm) throws -> [UInt8] {
        let signature =
            switch algorithm {
            case .sha1: try key.signature(for: Insecure.SHA1.hash(data: bytes), padding: .insecurePKCS1v1_5)
            default: try key.signature(for: SHA256.hash(data: bytes), padding: .insecurePKCS1v1_5)
            }
        return Array(signature.rawRepresentation)
    }
}
