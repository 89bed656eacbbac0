import Crypto
import SwiftASN1
import X509
import _CryptoExtras

extension TransactionReceiptSignature {
    /// The outcome of checking the RSA signature over a purchase-info.
    public enum Verification: Sendable, Hashable {
        /// The leaf certificate's key signed exactly these purchase-info bytes.
        case valid
        /// The signature does not prove the purchase-info; the failure says why.
        case invalid(Failure)
    }

    /// Why a signature check failed: a ``CodedError`` of ``FailureCode``.
    public typealias Failure = CodedError<FailureCode>

    /// The kinds of ``Failure``.
    public enum FailureCode: String, ErrorCode {
        case missingSignature
        case unreadableCertificate
        case unsupportedPublicKey
        case signatureMismatch
    }

    /// The leaf certificate as parsed by swift-certificates, for chain verification.
    ///
    /// swift-certificates refuses RSA keys shorter than 2048 bits, so this throws for the RSA-1024
    /// leaves of version 2 signatures; ``leafCertificateSummary()`` reads those.
    public func leafCertificate() throws -> Certificate {
        try Certificate(derEncoded: leafCertificateDER)
    }

    /// The leaf certificate's RSA public key.
    ///
    /// Taken from swift-certificates' parse of the certificate; only when that refuses a legacy
    /// RSA key shorter than 2048 bits (version 2 leaves are RSA-1024) is the key read from the
    /// certificate's SubjectPublicKeyInfo directly.
    public func leafPublicKey() throws(Failure) -> _RSA.Signing.PublicKey {
        let certificate: Certificate
        do {
            certificate = try leafCertificate()
        } catch {
            return try legacyPublicKey(certificateError: error)
        }
        guard let key = _RSA.Signing.PublicKey(certificate.publicKey) else {
            throw .unsupportedPublicKey.with("the leaf certificate's key is \(certificate.publicKey), not RSA")
        }
        return key
    }

    /// The key of a certificate swift-certificates refused, when the reason is an RSA key of 1024 to 2047 bits.
    private func legacyPublicKey(certificateError: any Error) throws(Failure) -> _RSA.Signing.PublicKey {
        let summary: LeafCertificateSummary
        do {
            summary = try leafCertificateSummary()
        } catch {
            throw .unreadableCertificate.with("the leaf certificate cannot be read: \(error)")
        }
        guard let key = try? _RSA.Signing.PublicKey(unsafeDERRepresentation: summary.subjectPublicKeyInfoDER),
            key.keySizeInBits < 2048
        else {
            throw .unreadableCertificate.with("the leaf certificate cannot be read: \(certificateError)")
        }
        return key
    }

    /// Checks the signature over `purchaseInfo` (the inner plist bytes after base64 decoding)
    /// with the leaf certificate's key. Says nothing about who issued the certificate.
    public func verify(purchaseInfo: some Collection<UInt8>) -> Verification {
        let key: _RSA.Signing.PublicKey
        do throws(Failure) {
            key = try leafPublicKey()
        } catch {
            return .invalid(error)
        }
        let digest = Insecure.SHA1.hash(data: Self.signedMessage(version: version, purchaseInfo: purchaseInfo))
        let signature = _RSA.Signing.RSASignature(rawRepresentation: signatureBytes)
        guard key.isValidSignature(signature, for: digest, padding: .insecurePKCS1v1_5) else {
            return .invalid(
                .signatureMismatch.with(
                    "the version \(version) signature does not verify with the \(key.keySizeInBits)-bit key of the leaf certificate"
                )
            )
        }
        return .valid
    }

    /// Whether the leaf certificate's key signed exactly these purchase-info bytes.
    public func isValid(forPurchaseInfo purchaseInfo: some Collection<UInt8>) -> Bool {
        verify(purchaseInfo: purchaseInfo) == .valid
    }
}

extension CodedError where Kind == TransactionReceiptSignature.FailureCode {
    /// The receipt carries no `signature` at all (Apple's mock `legacyTransaction` is such a receipt).
    public static var missingSignature: Self { Self(.missingSignature, "the receipt has no signature") }
    /// The leaf certificate is not an X.509 certificate that can be read.
    public static var unreadableCertificate: Self {
        Self(.unreadableCertificate, "the leaf certificate cannot be read")
    }
    /// The leaf certificate's key is not an RSA key of at least 1024 bits.
    public static var unsupportedPublicKey: Self {
        Self(.unsupportedPublicKey, "the leaf certificate's key is not RSA")
    }
    /// The signature was not made over these bytes by the leaf certificate's key.
    public static var signatureMismatch: Self {
        Self(.signatureMismatch, "the signature does not match the purchase-info")
    }
}
