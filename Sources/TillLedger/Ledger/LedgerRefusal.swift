import TillCore

/// Why the ledger room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
package enum LedgerReason: String, RefusalReason {
    case insufficientBalance
    case invalidAmount
    case invalidCredit
    case invalidExpiry
    case invalidNote
    case invalidRequestId
    case productNotFound
    case purchaseNotFound
    case requestIdReused
}

package typealias LedgerRefusal = Refused<LedgerReason>
