import TillCore

/// Why the lookup room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
enum LookupReason: String, RefusalReason {
    case accountDeleted
    case accountNotFound
    case appNotFound
    case deviceNotFound
    case wrongEnvironment
}

typealias LookupRefusal = Refused<LookupReason>
