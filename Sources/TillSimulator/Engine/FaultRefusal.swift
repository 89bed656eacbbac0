import TillCore

/// Why the fault room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
enum FaultReason: String, RefusalReason {
    case invalidFault
}

typealias FaultRefusal = Refused<FaultReason>
