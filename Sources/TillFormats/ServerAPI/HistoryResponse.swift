import TillCore

/// The response of Get Transaction History (`GET /inApps/v2/history/{transactionId}`).
///
/// ```
/// {"revision":"revision_output","hasMore":true,"bundleId":"com.example","appAppleId":323232,
///  "environment":"Sandbox","signedTransactions":["<JWS>","<JWS>"]}
/// ```
///
/// At most 20 transactions a page; pass `revision` back to get the next page while `hasMore`.
public struct HistoryResponse: Codable, Sendable, Hashable {
    /// The token of the next page.
    public var revision: String?
    /// Whether more pages follow.
    public var hasMore: Bool?
    public var bundleId: String?
    public var appAppleId: Int64?
    public var environment: AppStoreEnvironment?
    /// JWSs whose payloads are ``JWSTransactionDecodedPayload``s.
    public var signedTransactions: [String]?

    public init(
        revision: String? = nil,
        hasMore: Bool? = nil,
        bundleId: String? = nil,
        appAppleId: Int64? = nil,
        environment: AppStoreEnvironment? = nil,
        signedTransactions: [String]? = nil
    ) {
        self.revision = revision
        self.hasMore = hasMore
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.signedTransactions = signedTransactions
    }
}
