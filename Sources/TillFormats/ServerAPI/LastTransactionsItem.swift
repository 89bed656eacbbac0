import TillCore

/// The latest transaction and renewal info of one subscription in a ``SubscriptionGroupIdentifierItem``.
///
/// ```
/// {"status":1,"originalTransactionId":"3749183","signedTransactionInfo":"<JWS>","signedRenewalInfo":"<JWS>"}
/// ```
public struct LastTransactionsItem: Codable, Sendable, Hashable {
    public var status: AppStoreSubscriptionStatus?
    public var originalTransactionId: String?
    /// A JWS whose payload is a ``JWSTransactionDecodedPayload``.
    public var signedTransactionInfo: String?
    /// A JWS whose payload is a ``JWSRenewalInfoDecodedPayload``.
    public var signedRenewalInfo: String?

    public init(
        status: AppStoreSubscriptionStatus? = nil,
        originalTransactionId: String? = nil,
        signedTransactionInfo: String? = nil,
        signedRenewalInfo: String? = nil
    ) {
        self.status = status
        self.originalTransactionId = originalTransactionId
        self.signedTransactionInfo = signedTransactionInfo
        self.signedRenewalInfo = signedRenewalInfo
    }
}
