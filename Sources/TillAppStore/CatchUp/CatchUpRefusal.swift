import TillCatalogue
import TillCore
import TillLedger

/// Why the catchup room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
package enum CatchUpReason: String, RefusalReason {
    case catchUpNeverRun
    case catchUpRunning
    case noAPIKey
}

package typealias CatchUpRefusal = Refused<CatchUpReason>
