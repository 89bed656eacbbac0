import TillCatalogue
import TillCore
import TillLedger

/// Why the notification room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
package enum NotificationReason: String, RefusalReason {
    case appNotFound
    case invalidSignature
    case malformedNotification
    case notificationNotFound
}

package typealias NotificationRefusal = Refused<NotificationReason>
