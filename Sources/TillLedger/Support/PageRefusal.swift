import TillCore

/// Why the page room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
package enum PageReason: String, RefusalReason {
    case invalidCursor
    case invalidLimit
}

package typealias PageRefusal = Refused<PageReason>
