import Foundation
import SwiftASN1
import TillCore
import X509
import _CryptoExtras

/// Verifies app receipts: the PKCS#7 signature, the certificate chain at the receipt's creation date,
/// and the app and environment the receipt was issued for.
///
/// In order:
/// 1. the size limit, then the PKCS#7 structure (DER or BER) with exactly one RSA signer;
/// 2. the signature (PKCS#1 v1.5 over SHA-1, SHA-256, SHA-384 or SHA-512; directly over the payload,
///    or over signed attributes that carry the payload's digest) with the signer's certificate;
/// 3. the payload, decoded into an ``AppReceipt``;
/// 4. the chain from the signer through the embedded (and configured) intermediates to a configured
///    root, at the receipt creation date (attribute 12), with Apple's marker extensions;
/// 5. bundle id, environment (from the receipt type) and, in production, the app's Apple ID.
///
/// Signer and chain are cached by the bytes of the embedded certificates, so a steady stream of
/// receipts costs one RSA signature check each.
public struct ReceiptVerifier: Sendable {
    /// What a verifier accepts. Nil fields are not checked.
    public struct Configuration: Sendable {
        public var anchors: TrustAnchors
        public var bundleId: String?
        public var environment: AppStoreEnvironment?
        /// Compared with attribute 1 in the production environment.
        public var appAppleId: Int64?
        /// Check certificates at this instant instead of the receipt creation date.
        public var validationTime: Date?
        /// The largest receipt accepted, in bytes (after base64 decoding).
        public var maximumSize: Int
        /// The deepest ASN.1 nesting accepted.
        public var maximumDepth: Int
        /// The most certificates a receipt may embed (Apple's embed two, Xcode's one).
        public var maximumCertificates: Int
        /// The most in-app purchases a receipt may hold: each becomes a row of the ledger, and the size limit alone
        /// would allow some 25,000 minimal ones.
        public var maximumPurchases: Int

        public init(
            anchors: TrustAnchors = .appleReceipts,
            bundleId: String? = nil,
            environment: AppStoreEnvironment? = nil,
            appAppleId: Int64? = nil,
            validationTime: Date? = nil,
            maximumSize: Int = 1 << 20,
            maximumDepth: Int = 32,
            maximumCertificates: Int = 8,
            maximumPurchases: Int = 4_096
        ) {
            self.anchors = anchors
            self.bundleId = bundleId
            self.environment = environment
            self.appAppleId = appAppleId
            self.validationTime = validationTime
            self.maximumSize = maximumSize
            self.maximumDepth = maximumDepth
            self.maximumCertificates = maximumCertificates
            self.maximumPurchases = maximumPurchases
        }
    }

    public let configuration: Configuration
    private let now: @Sendable () -> Date
    private let validator: ChainValidator
    private let cache: BoundedCache<CachedSigner>

    public init(_ configuration: Configuration, now: @escaping @Sendable () -> Date = { Date() }) {
        self.configuration = configuration
        self.now = now
        self.validator = ChainValidator(anchors: configuration.anchors, requirements: .receiptSigning)
        self.cache = BoundedCache()
    }

    /// Verifies a base64 receipt as apps send it (line breaks allowed).
    public func verify(base64: String) async -> VerificationOutcome<VerifiedReceipt> {
        guard base64.utf8.count <= configuration.maximumSize / 3 * 4 + 4096 else {
            return .invalid(.init(.tooLarge, "the receipt is larger than \(configuration.maximumSize) bytes"))
        }
        guard let der = Base64.decode(base64, alphabet: .standard) else {
            return .invalid(.init(.invalidFormat, "the receipt is not base64"))
        }
        return await verify(der: der)
    }

    /// Verifies a receipt's DER or BER bytes.
    ///
    /// Everything but a chain not validated before is checked synchronously (`check(der:)`): an async function keeps
    /// what it holds across a suspension in a frame from its task's allocator, and this one's, with the receipt's
    /// types inlined, was 12 KB on every call of the server's intake and of the simulator's verifyReceipt (heaptrack).
    public func verify(der: [UInt8]) async -> VerificationOutcome<VerifiedReceipt> {
        switch check(der: der) {
        case .decided(let outcome):
            return outcome
        case .chainToValidate(let pending):
            let signer = pending.signer
            let validation = await validator.validate(
                leaf: signer.leaf,
                intermediates: signer.intermediates,
                at: pending.date
            )
            return finish(pending, validation)
        }
    }

    /// What the synchronous checks decided, or the chain they leave to validate.
    private enum Step {
        case decided(VerificationOutcome<VerifiedReceipt>)
        case chainToValidate(PendingChain)
    }

    /// A receipt whose signature and payload are good, and whose signer's chain is to be validated at `date`.
    private final class PendingChain: Sendable {
        let receipt: AppReceipt
        let signer: CachedSigner
        let keyBytes: ArraySlice<UInt8>
        let date: Date

        init(receipt: AppReceipt, signer: CachedSigner, keyBytes: ArraySlice<UInt8>, date: Date) {
            self.receipt = receipt
            self.signer = signer
            self.keyBytes = keyBytes
            self.date = date
        }
    }

    /// Steps 1 to 5, but for a chain not validated before.
    private func check(der: [UInt8]) -> Step {
        guard der.count <= configuration.maximumSize else {
            return .decided(
                .invalid(
                    .init(.tooLarge, "the receipt is \(der.count) bytes; the limit is \(configuration.maximumSize)")
                )
            )
        }
        let container: PKCS7Container
        do {
            container = try PKCS7Container(
                der,
                maximumDepth: configuration.maximumDepth,
                maximumCertificates: configuration.maximumCertificates
            )
        } catch .tooManyCertificates(let limit) {
            return .decided(.invalid(.init(.tooLarge, "the receipt embeds more than \(limit) certificates")))
        } catch .unsupportedAlgorithm {
            return .decided(
                .invalid(
                    .init(
                        .unsupportedAlgorithm,
                        "the receipt is signed with an algorithm other than RSA with SHA-1/SHA-2"
                    )
                )
            )
        } catch {
            return .decided(.invalid(.init(.invalidFormat, "not a PKCS#7 receipt: \(error)")))
        }

        // 1. The signer, cached by the embedded certificates.
        let keyBytes = container.certificatesField + container.signerIdentifier
        let signer: CachedSigner
        if let cached = cache.lookup(keyBytes) {
            signer = cached
        } else {
            switch Self.findSigner(container) {
            case .invalid(let failure): return .decided(.invalid(failure))
            case .valid(let found):
                signer = found
                cache[BytesKey(keyBytes)] = found
            }
        }

        // 2. The signature.
        guard container.isSignatureValid(key: signer.key) else {
            return .decided(
                .invalid(
                    .init(.verificationFailure, "the receipt's signature does not match its signing certificate")
                )
            )
        }

        // 3. The payload.
        let receipt: AppReceipt
        do {
            receipt = try AppReceipt(
                payload: container.contentBuffer,
                range: container.contentRange,
                maximumPurchases: configuration.maximumPurchases
            )
        } catch .tooManyPurchases(let limit) {
            return .decided(.invalid(.init(.tooLarge, "the receipt holds more than \(limit) in-app purchases")))
        } catch {
            return .decided(.invalid(.init(.malformedPayload, "the receipt payload cannot be decoded: \(error)")))
        }

        // 4. The chain at the creation date.
        let date = configuration.validationTime ?? receipt.receiptCreationDate ?? now()
        let chain: ValidatedChain
        if let cached = signer.chain, cached.isValid(at: date) {
            chain = cached
        } else if let why = signer.unreachable {
            // A server trusting several sets of roots (Apple's, then the simulator's) tries each: comparing the
            // names again for every receipt of the other set cost 2.6% of a submission.
            return .decided(
                .invalid(
                    .init(.invalidChain, "certificate chain not valid at \(ReceiptDate.formatRFC3339(date)): \(why)")
                )
            )
        } else {
            return .chainToValidate(PendingChain(receipt: receipt, signer: signer, keyBytes: keyBytes, date: date))
        }
        return .decided(checkApp(VerifiedReceipt(receipt: receipt, chain: chain)))
    }

    /// The chain of a signer not seen before (or not at this date), validated; then the app and the environment.
    private func finish(_ pending: PendingChain, _ validation: ChainValidator.Outcome)
        -> VerificationOutcome<VerifiedReceipt>
    {
        let signer = pending.signer
        switch validation {
        case .invalid(let why):
            if !validator.reachesRoot(signer.leaf, intermediates: signer.intermediates) {
                cache.update(BytesKey(pending.keyBytes)) { $0.unreachable = why }
            }
            return .invalid(
                .init(
                    .invalidChain,
                    "certificate chain not valid at \(ReceiptDate.formatRFC3339(pending.date)): \(why)"
                )
            )
        case .valid(let validated):
            // Every embedded certificate must be part of the chain: nothing unsigned rides along.
            guard signer.embedded.allSatisfy(validated.certificates.contains) else {
                return .invalid(.init(.invalidChain, "the receipt embeds a certificate that is not part of its chain"))
            }
            cache.update(BytesKey(pending.keyBytes)) { $0.chain = validated }
            return checkApp(VerifiedReceipt(receipt: pending.receipt, chain: validated))
        }
    }

    /// Step 5: the app and the environment the receipt was issued for.
    private func checkApp(_ verified: VerifiedReceipt) -> VerificationOutcome<VerifiedReceipt> {
        let receipt = verified.receipt
        if let expected = configuration.bundleId, receipt.bundleId != expected {
            return .invalid(
                .init(
                    .invalidAppIdentifier,
                    "issued for bundle id \(receipt.bundleId ?? "(none)"), expected \(expected)"
                )
            )
        }
        if let expected = configuration.environment, receipt.environment != expected {
            return .invalid(
                .init(
                    .invalidEnvironment,
                    "issued for environment \(receipt.environment?.rawValue ?? "(none)"), expected \(expected)"
                )
            )
        }
        if configuration.environment == .production, let expected = configuration.appAppleId,
            receipt.appItemId != expected
        {
            return .invalid(
                .init(
                    .invalidAppIdentifier,
                    "issued for app Apple ID \(receipt.appItemId.map(String.init) ?? "(none)"), expected \(expected)"
                )
            )
        }
        return .valid(verified)
    }

    /// Decodes a receipt without checking its signature or chain (`till inspect --no-verify`).
    /// The limits are the verifier's: a receipt too large to verify is too large to decode.
    public static func decodeWithoutVerifying(
        der: [UInt8],
        maximumDepth: Int = 32,
        maximumCertificates: Int = 8,
        maximumPurchases: Int = 4_096
    ) throws -> AppReceipt {
        let container = try PKCS7Container(der, maximumDepth: maximumDepth, maximumCertificates: maximumCertificates)
        return try AppReceipt(
            payload: container.contentBuffer,
            range: container.contentRange,
            maximumPurchases: maximumPurchases
        )
    }

    /// The certificate named by the signer identifier, among the embedded ones.
    private static func findSigner(_ container: PKCS7Container) -> VerificationOutcome<CachedSigner> {
        var certificates: [Certificate] = []
        for der in container.certificates {
            guard let certificate = try? Certificate(derEncoded: der) else {
                return .invalid(.init(.invalidCertificate, "an embedded certificate cannot be decoded"))
            }
            certificates.append(certificate)
        }
        guard let identifier = try? IssuerAndSerial(derEncoded: container.signerIdentifier) else {
            return .invalid(.init(.invalidFormat, "the signer is not identified by issuer and serial number"))
        }
        guard
            let leaf = certificates.first(where: identifier.identifies)
        else {
            return .invalid(.init(.invalidCertificate, "the signing certificate is not embedded in the receipt"))
        }
        guard let key = _RSA.Signing.PublicKey(leaf.publicKey) else {
            return .invalid(.init(.invalidCertificate, "the signing certificate's key is not RSA"))
        }
        return .valid(
            CachedSigner(
                leaf: leaf,
                intermediates: certificates.filter { $0 != leaf },
                embedded: certificates,
                key: key,
                chain: nil
            )
        )
    }
}

/// A verified app receipt and the chain that signed it.
public struct VerifiedReceipt: Sendable {
    public var receipt: AppReceipt
    public var chain: ValidatedChain
}

/// `IssuerAndSerialNumber ::= SEQUENCE { issuer Name, serialNumber CertificateSerialNumber }`
///
/// The serial is compared in normalised form: some issuers write serials with the top bit set.
struct IssuerAndSerial {
    var issuer: DistinguishedName
    var serialNumber: Certificate.SerialNumber

    init(derEncoded bytes: ArraySlice<UInt8>) throws {
        let reader = ASN1Reader(Array(bytes))
        let sequence = try reader.element(at: 0, limit: bytes.count, expecting: ASN1Tag.sequence)
        let parts = try reader.children(of: sequence)
        guard parts.count == 2, parts[1].identifier == ASN1Tag.integer, sequence.end == bytes.count else {
            throw ASN1Error.unexpectedPrimitive
        }
        let issuerNode: ASN1Node = try DER.parse(reader.encoding(of: parts[0]))
        issuer = try DistinguishedName(derEncoded: issuerNode)
        serialNumber = Certificate.SerialNumber(bytes: reader[parts[1]])
    }

    func identifies(_ certificate: Certificate) -> Bool {
        certificate.issuer == issuer && Certificate.SerialNumber(bytes: certificate.serialNumber.bytes) == serialNumber
    }
}

struct CachedSigner: Sendable {
    var leaf: Certificate
    var intermediates: [Certificate]
    /// All certificates of the receipt, the leaf included.
    var embedded: [Certificate]
    var key: _RSA.Signing.PublicKey
    var chain: ValidatedChain?
    /// Set once the chain was found to have no path of issuer names to a trusted root: that depends on the
    /// certificates alone, not on the date, so it is not worked out again for every receipt they sign.
    var unreachable: String?
}
