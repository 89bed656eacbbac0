/// The response of Get Transaction Info (`GET /inApps/v1/transactions/{transactionId}`).
///
/// ```
/// {"signedTransactionInfo":"<JWS>"}
/// ```
public struct TransactionInfoResponse: Codable, Sendable, Hashable {
    /// A JWS whose payload is a ``JWSTransactionDecodedPayload``.
    public var signedTransactionInfo: String?

    public init(signedTransactionInfo: String? = nil) {
        self.signedTransactionInfo = signedTransactionInfo
    }
}
