/// The body of Extend a Subscription Renewal Date
/// (`PUT /inApps/v1/subscriptions/extend/{originalTransactionId}`).
///
/// ```
/// {"extendByDays":45,"extendReasonCode":1,"requestIdentifier":"fdf964a4-…"}
/// ```
public struct ExtendRenewalDateRequest: Codable, Sendable, Hashable {
    /// The number of days to extend by (Apple allows up to 90).
    public var extendByDays: Int?
    public var extendReasonCode: ExtendReasonCode?
    /// A UUID the developer picks to make the request idempotent.
    public var requestIdentifier: String?

    public init(extendByDays: Int? = nil, extendReasonCode: ExtendReasonCode? = nil, requestIdentifier: String? = nil) {
        self.extendByDays = extendByDays
        self.extendReasonCode = extendReasonCode
        self.requestIdentifier = requestIdentifier
    }
}
