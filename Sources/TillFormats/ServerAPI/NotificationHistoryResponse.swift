/// The response of Get Notification History.
///
/// ```
/// {"paginationToken":"57715481-…","hasMore":true,
///  "notificationHistory":[{"signedPayload":"<JWS>","sendAttempts":[…]}]}
/// ```
public struct NotificationHistoryResponse: Codable, Sendable, Hashable {
    /// The `paginationToken` query parameter of the next page.
    public var paginationToken: String?
    /// Whether more pages follow.
    public var hasMore: Bool?
    public var notificationHistory: [NotificationHistoryResponseItem]?

    public init(
        paginationToken: String? = nil,
        hasMore: Bool? = nil,
        notificationHistory: [NotificationHistoryResponseItem]? = nil
    ) {
        self.paginationToken = paginationToken
        self.hasMore = hasMore
        self.notificationHistory = notificationHistory
    }
}
