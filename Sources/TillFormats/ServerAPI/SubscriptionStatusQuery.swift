import TillCore

/// The query parameters of Get All Subscription Statuses (`GET /inApps/v1/subscriptions/{transactionId}`).
///
/// ```
/// status=2&status=1
/// ```
///
/// No `status` parameter means every status.
public struct SubscriptionStatusQuery: Sendable, Hashable {
    /// The statuses to return, in the order given; empty for all.
    public var status: [AppStoreSubscriptionStatus]

    public init(status: [AppStoreSubscriptionStatus] = []) {
        self.status = status
    }

    /// The parameters as name/value pairs (`status` repeated).
    public var queryItems: [(String, String)] { status.map { ("status", String($0.rawValue)) } }

    /// The parameters as a query string (without `?`).
    public var queryString: String { QueryString.format(queryItems) }

    /// The statuses Apple accepts in the filter (1 active … 5 revoked).
    public static let acceptedValues: ClosedRange<Int> = 1...5

    /// Parses parameters as the App Store does: a `status` that is not 1–5 throws `invalidStatus`;
    /// other names are ignored.
    public init(queryItems: [(String, String)]) throws(APIError) {
        self.init()
        for (name, value) in queryItems where name == "status" {
            guard let raw = Int(value), Self.acceptedValues.contains(raw) else { throw APIError(.invalidStatus) }
            status.append(AppStoreSubscriptionStatus(rawValue: raw))
        }
    }

    /// Parses a query string (without `?`); see ``init(queryItems:)``.
    public init(queryString: String) throws(APIError) {
        try self.init(queryItems: QueryString.parse(queryString))
    }
}
