/// The response of Look Up Order ID (`GET /inApps/v1/lookup/{orderId}`).
///
/// ```
/// {"status":1,"signedTransactions":["<JWS>","<JWS>"]}
/// ```
public struct OrderLookupResponse: Codable, Sendable, Hashable {
    /// Whether the order id is valid (0) or not (1).
    public var status: OrderLookupStatus?
    /// JWSs whose payloads are the order's ``JWSTransactionDecodedPayload``s.
    public var signedTransactions: [String]?

    public init(status: OrderLookupStatus? = nil, signedTransactions: [String]? = nil) {
        self.status = status
        self.signedTransactions = signedTransactions
    }
}
