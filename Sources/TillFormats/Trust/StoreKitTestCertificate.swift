import Crypto
import Foundation
import SwiftASN1
import X509

/// StoreKit Testing in Xcode's certificate: the one self-signed P-256 certificate that signs a project's transactions,
/// renewal info and app transactions on the developer's machine (`x5c` holds only it).
///
/// Xcode exports it from a `.storekit` file with Editor → Save Public Certificate, as DER
/// (`StoreKitTestCertificate.cer`). Read here from PEM (`openssl x509 -inform der -in StoreKitTestCertificate.cer`)
/// or from the base64 of that DER, and checked to be what StoreKit Testing signs with:
///
///     Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue }   -- RFC 5280
///     issuer = subject, signatureValue made by the certificate's own key, an id-ecPublicKey on prime256v1
public struct StoreKitTestCertificate: Sendable, Hashable {
    public let certificate: Certificate
    /// The certificate's DER, as exported.
    public let der: [UInt8]

    /// Why a text is not a StoreKit test certificate, for people.
    public struct Invalid: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    public init(derEncoded der: [UInt8]) throws(Invalid) {
        guard let certificate = try? Certificate(derEncoded: der) else {
            throw Invalid(description: "not a DER X.509 certificate")
        }
        guard certificate.issuer == certificate.subject,
            certificate.publicKey.isValidSignature(certificate.signature, for: certificate)
        else {
            throw Invalid(description: "\(certificate.subject) is not self-signed: StoreKit Testing's certificate is")
        }
        guard P256.Signing.PublicKey(certificate.publicKey) != nil else {
            throw Invalid(description: "\(certificate.subject) has no P-256 key: StoreKit Testing signs with ES256")
        }
        self.certificate = certificate
        self.der = der
    }

    /// Every certificate of `text`: PEM blocks (one or several), or the base64 of one DER certificate.
    public static func parse(_ text: String) throws(Invalid) -> [StoreKitTestCertificate] {
        if text.contains("-----BEGIN") {
            guard let documents = try? PEMDocument.parseMultiple(pemString: text), !documents.isEmpty else {
                throw Invalid(description: "not PEM")
            }
            var certificates: [StoreKitTestCertificate] = []
            for document in documents {
                guard document.discriminator == "CERTIFICATE" else {
                    throw Invalid(description: "a PEM \(document.discriminator), not a CERTIFICATE")
                }
                certificates.append(try StoreKitTestCertificate(derEncoded: document.derBytes))
            }
            return certificates
        }
        let base64 = text.filter { !$0.isWhitespace }
        guard !base64.isEmpty, let der = Base64.decode(base64, alphabet: .standard) else {
            throw Invalid(description: "neither PEM nor the base64 of a DER certificate")
        }
        return [try StoreKitTestCertificate(derEncoded: der)]
    }

    /// The SHA-256 of the DER in upper-case hex pairs joined by colons, as `openssl x509 -fingerprint -sha256` prints it.
    public var sha256Fingerprint: String {
        SHA256.hash(data: der).map { String(format: "%02X", $0) }.joined(separator: ":")
    }

    /// The certificate as one PEM block.
    public var pem: String {
        PEMDocument(type: "CERTIFICATE", derBytes: der).pemString
    }
}
