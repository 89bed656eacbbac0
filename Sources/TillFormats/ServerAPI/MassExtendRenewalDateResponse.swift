/// The response of Extend Subscription Renewal Dates for All Active Subscribers.
///
/// ```
/// {"requestIdentifier":"758883e8-151b-47b7-abd0-60c4d804c2f5"}
/// ```
public struct MassExtendRenewalDateResponse: Codable, Sendable, Hashable {
    /// The request's identifier, as sent.
    public var requestIdentifier: String?

    public init(requestIdentifier: String? = nil) {
        self.requestIdentifier = requestIdentifier
    }
}
