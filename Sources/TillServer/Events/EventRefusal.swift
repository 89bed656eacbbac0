import TillCore

/// Why the event room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
enum EventReason: String, RefusalReason {
    case bundleIdRequired
    case invalidCursor
}

typealias EventRefusal = Refused<EventReason>
