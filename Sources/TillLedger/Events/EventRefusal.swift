import TillCore

/// Why the event room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
package enum EventReason: String, RefusalReason {
    case bundleIdRequired
    case invalidCursor
}

package typealias EventRefusal = Refused<EventReason>
