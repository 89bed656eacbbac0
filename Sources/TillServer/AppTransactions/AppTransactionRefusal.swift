import TillCatalogue
import TillCore
import TillLedger

/// Why the apptransaction room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
enum AppTransactionReason: String, RefusalReason {
    case appTransactionNotFound
    case invalidEnvironment
}

typealias AppTransactionRefusal = Refused<AppTransactionReason>
