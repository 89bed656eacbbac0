import TillCatalogue
import TillCore
import TillLedger

/// Why the queue room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
package enum QueueReason: String, RefusalReason {
    case databaseInUse
    case databaseLockUnavailable
    case noAPIKey
    case notDeadLettered
    case submissionNotFound
}

package typealias QueueRefusal = Refused<QueueReason>
