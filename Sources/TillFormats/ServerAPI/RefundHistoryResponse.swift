/// The response of Get Refund History (`GET /inApps/v2/refund/lookup/{transactionId}?revision=…`).
///
/// ```
/// {"signedTransactions":["<JWS>","<JWS>"],"revision":"revision_output","hasMore":true}
/// ```
///
/// At most 20 refunded transactions a page, by ascending `revocationDate`.
public struct RefundHistoryResponse: Codable, Sendable, Hashable {
    /// JWSs whose payloads are refunded ``JWSTransactionDecodedPayload``s.
    public var signedTransactions: [String]?
    /// The token of the next page (the `revision` query parameter).
    public var revision: String?
    /// Whether more pages follow.
    public var hasMore: Bool?

    public init(signedTransactions: [String]? = nil, revision: String? = nil, hasMore: Bool? = nil) {
        self.signedTransactions = signedTransactions
        self.revision = revision
        self.hasMore = hasMore
    }
}
