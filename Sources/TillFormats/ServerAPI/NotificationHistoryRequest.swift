import Foundation

/// The body of Get Notification History (`POST /inApps/v1/notifications/history?paginationToken=…`).
///
/// ```
/// {"startDate":1698148900000,"endDate":1698148950000,"notificationType":"SUBSCRIBED",
///  "notificationSubtype":"INITIAL_BUY","transactionId":"999733843","onlyFailures":true}
/// ```
///
/// `startDate` must be within the last 180 days; `transactionId` and the notification type
/// filters are mutually exclusive (`multipleFiltersSupplied`).
public struct NotificationHistoryRequest: Codable, Sendable, Hashable {
    public var startDate: Date?
    public var endDate: Date?
    public var notificationType: NotificationType?
    public var notificationSubtype: NotificationSubtype?
    /// Only notifications about the transaction chain of this transaction id.
    public var transactionId: String?
    /// Only notifications that never reached the server.
    public var onlyFailures: Bool?

    public init(
        startDate: Date? = nil,
        endDate: Date? = nil,
        notificationType: NotificationType? = nil,
        notificationSubtype: NotificationSubtype? = nil,
        transactionId: String? = nil,
        onlyFailures: Bool? = nil
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.notificationType = notificationType
        self.notificationSubtype = notificationSubtype
        self.transactionId = transactionId
        self.onlyFailures = onlyFailures
    }
}
