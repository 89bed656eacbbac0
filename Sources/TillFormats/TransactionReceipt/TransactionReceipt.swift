import TillCore
import X509

/// An iOS 6-style transaction receipt (`SKPaymentTransaction.transactionReceipt`): the base64 of
/// an OpenStep plist whose `purchase-info` is itself a base64 OpenStep plist.
///
/// ```
/// {
/// 	"signature" = "<base64 signature blob>";
/// 	"purchase-info" = "<base64 of the inner plist>";
/// 	"environment" = "Sandbox";      (only in the sandbox)
/// 	"pod" = "100";
/// 	"signing-status" = "0";
/// }
/// ```
///
/// Only the purchase-info is signed (see ``TransactionReceiptSignature``): `environment`, `pod`
/// and `signing-status` can be changed by anyone holding the receipt without breaking the signature.
public struct TransactionReceipt: Sendable, Hashable {
    /// The parsed `signature` blob; nil when the receipt has none.
    public let signature: TransactionReceiptSignature?
    /// The inner plist exactly as signed (the `purchase-info` value after base64 decoding).
    public let purchaseInfoBytes: [UInt8]
    /// The inner plist's keys and values.
    public let purchaseInfo: PurchaseInfo
    /// The outer `environment` as written: `Sandbox`, or nil in production.
    public let environmentValue: String?
    /// The outer `pod` (the App Store server pod that issued the receipt), e.g. `16` or `100`.
    public let pod: String?
    /// The outer `signing-status`, `0` in every receipt seen.
    public let signingStatus: String?
    /// Outer keys other than the five above, kept as written.
    public let additionalFields: [String: String]

    /// The outer plist's known keys.
    public enum Key {
        public static let signature = "signature"
        public static let purchaseInfo = "purchase-info"
        public static let environment = "environment"
        public static let pod = "pod"
        public static let signingStatus = "signing-status"

        /// The known keys in the order Apple writes them.
        public static let all = [signature, purchaseInfo, environment, pod, signingStatus]
    }

    /// Assembles a receipt from its parts, parsing `purchaseInfoBytes` (at most `limits.maxBytes`).
    public init(
        signature: TransactionReceiptSignature?,
        purchaseInfoBytes: [UInt8],
        environmentValue: String?,
        pod: String?,
        signingStatus: String?,
        additionalFields: [String: String] = [:],
        limits: OpenStepPlist.Limits = .default
    ) throws(TransactionReceiptError) {
        let plist: OpenStepPlist
        do {
            plist = try OpenStepPlist(parsing: purchaseInfoBytes, limits: limits)
        } catch {
            throw error == .tooLarge
                ? .tooLarge.with("purchase-info: \(error.message)")
                : .malformedPlist.with("purchase-info: \(error)")
        }
        self.purchaseInfo = try PurchaseInfo(plist: plist)
        self.signature = signature
        self.purchaseInfoBytes = purchaseInfoBytes
        self.environmentValue = environmentValue
        self.pod = pod
        self.signingStatus = signingStatus
        self.additionalFields = additionalFields.filter { !Key.all.contains($0.key) }
    }

    /// The environment the receipt says it comes from: ``TillCore/AppStoreEnvironment/sandbox`` for
    /// `"environment" = "Sandbox"`, ``TillCore/AppStoreEnvironment/production`` when the key is absent.
    /// Any other value is kept as an unknown environment rather than taken for production.
    ///
    /// The environment is not signed.
    public var environment: AppStoreEnvironment {
        guard let environmentValue else { return .production }
        return AppStoreEnvironment(rawValue: environmentValue)
    }

    /// The signature blob's version (2 or 3); nil without a signature.
    public var signatureVersion: UInt8? { signature?.version }
    /// The raw RSA signature; nil without a signature.
    public var signatureBytes: [UInt8]? { signature?.signatureBytes }
    /// The DER leaf certificate; nil without a signature.
    public var leafCertificateDER: [UInt8]? { signature?.leafCertificateDER }

    /// The leaf certificate as swift-certificates parses it, for chain verification; nil without a signature.
    /// Throws for RSA-1024 (version 2) leaves, which swift-certificates refuses.
    public func leafCertificate() throws -> Certificate? {
        try signature?.leafCertificate()
    }

    /// Checks that the leaf certificate's key signed ``purchaseInfoBytes``.
    /// Whether the certificate chains to Apple's root is not checked here.
    public func verifySignature() -> TransactionReceiptSignature.Verification {
        guard let signature else { return .invalid(.missingSignature) }
        return signature.verify(purchaseInfo: purchaseInfoBytes)
    }

    /// Whether the leaf certificate's key signed ``purchaseInfoBytes`` (see ``verifySignature()``).
    public func isSignatureValid() -> Bool {
        verifySignature() == .valid
    }
}
