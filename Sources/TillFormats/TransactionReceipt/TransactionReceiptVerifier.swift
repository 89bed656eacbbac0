import Foundation
import SwiftASN1
import TillCore
import X509

/// Verifies iOS 6-style transaction receipts: the signature over purchase-info, the leaf's chain to a
/// configured root at the purchase date, and the bundle id.
///
/// The blob carries only the leaf certificate, so the chain is completed from the anchors'
/// intermediates (Apple's WWDR certificates are built in). Version 2 receipts (before 2016) are signed
/// by RSA-1024 leaves of the retired iTunes Store CA: their signature is checked, but swift-certificates
/// does not accept 1024-bit keys, so their chain cannot be validated and they are refused with
/// `invalidCertificate`.
///
/// The outer `environment` key is not covered by the signature: a receipt's environment is what it
/// claims. It is checked against the configuration, but only Apple's verifyReceipt can confirm it.
public struct TransactionReceiptVerifier: Sendable {
    public struct Configuration: Sendable {
        public var anchors: TrustAnchors
        public var bundleId: String?
        /// Compared with the receipt's claimed (unsigned) environment.
        public var environment: AppStoreEnvironment?
        /// Check certificates at this instant instead of the purchase date.
        public var validationTime: Date?

        public init(
            anchors: TrustAnchors = .appleReceipts,
            bundleId: String? = nil,
            environment: AppStoreEnvironment? = nil,
            validationTime: Date? = nil
        ) {
            self.anchors = anchors
            self.bundleId = bundleId
            self.environment = environment
            self.validationTime = validationTime
        }
    }

    public let configuration: Configuration
    private let now: @Sendable () -> Date
    private let validator: ChainValidator
    private let chains: BoundedCache<ValidatedChain>

    public init(_ configuration: Configuration, now: @escaping @Sendable () -> Date = { Date() }) {
        self.configuration = configuration
        self.now = now
        self.validator = ChainValidator(anchors: configuration.anchors, requirements: .transactionReceipt)
        self.chains = BoundedCache()
    }

    /// Verifies a base64 transaction receipt as `SKPaymentTransaction.transactionReceipt` gave it.
    public func verify(base64: String) async -> VerificationOutcome<TransactionReceipt> {
        let receipt: TransactionReceipt
        do {
            receipt = try TransactionReceipt.decode(base64: base64)
        } catch {
            return .invalid(.init(.invalidFormat, "not an iOS 6-style transaction receipt: \(error)"))
        }
        return await verify(receipt)
    }

    /// Verifies a decoded transaction receipt.
    public func verify(_ receipt: TransactionReceipt) async -> VerificationOutcome<TransactionReceipt> {
        switch receipt.verifySignature() {
        case .valid: break
        case .invalid(let failure) where failure == .signatureMismatch:
            return .invalid(.init(.verificationFailure, failure.message))
        case .invalid(let failure) where failure == .missingSignature:
            return .invalid(.init(.invalidFormat, failure.message))
        case .invalid(let failure):
            return .invalid(.init(.invalidCertificate, failure.message))
        }
        guard let der = receipt.leafCertificateDER else {
            return .invalid(.init(.invalidFormat, "the receipt has no signing certificate"))
        }
        guard let leaf = try? Certificate(derEncoded: der) else {
            return .invalid(
                .init(
                    .invalidCertificate,
                    "the signing certificate cannot be validated (version \(receipt.signatureVersion ?? 0) receipts use RSA-1024 leaves)"
                )
            )
        }
        let date = configuration.validationTime ?? receipt.purchaseInfo.purchaseDate ?? now()
        let key = BytesKey(der)
        if let cached = chains[key], cached.isValid(at: date) {
            // cached chain covers this date
        } else {
            switch await validator.validate(leaf: leaf, intermediates: [], at: date) {
            case .invalid(let why):
                return .invalid(
                    .init(.invalidChain, "certificate chain not valid at \(ReceiptDate.formatRFC3339(date)): \(why)")
                )
            case .valid(let chain):
                chains[key] = chain
            }
        }
        if let expected = configuration.bundleId, receipt.purchaseInfo.bundleId != expected {
            return .invalid(
                .init(
                    .invalidAppIdentifier,
                    "issued for bundle id \(receipt.purchaseInfo.bundleId ?? "(none)"), expected \(expected)"
                )
            )
        }
        if let expected = configuration.environment, receipt.environment != expected {
            return .invalid(
                .init(.invalidEnvironment, "claims environment \(receipt.environment), expected \(expected)")
            )
        }
        return .valid(receipt)
    }
}
