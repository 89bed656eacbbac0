import TillCore

/// Why the retention room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
enum RetentionReason: String, RefusalReason {
    case imageNotFound
    case messageNotFound
    case subscriptionNotFound
}

typealias RetentionRefusal = Refused<RetentionReason>
