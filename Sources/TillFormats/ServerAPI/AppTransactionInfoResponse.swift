/// The response of Get App Transaction Info (`GET /inApps/v1/transactions/appTransactions/{transactionId}`).
///
/// ```
/// {"signedAppTransactionInfo":"<JWS>"}
/// ```
public struct AppTransactionInfoResponse: Codable, Sendable, Hashable {
    /// A JWS whose payload is an ``AppTransaction``.
    public var signedAppTransactionInfo: String?

    public init(signedAppTransactionInfo: String? = nil) {
        self.signedAppTransactionInfo = signedAppTransactionInfo
    }
}
