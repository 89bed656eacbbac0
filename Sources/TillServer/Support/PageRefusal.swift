import TillCore

/// Why the page room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
enum PageReason: String, RefusalReason {
    case invalidCursor
    case invalidLimit
}

typealias PageRefusal = Refused<PageReason>
