import TillCore

/// Why the storeevent room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
enum StoreEventReason: String, RefusalReason {
    case accountNotFound
    case invalidEnvironment
    case invalidSubtype
    case invalidTokenType
    case subscriptionNotFound
    case wrongEnvironment
}

typealias StoreEventRefusal = Refused<StoreEventReason>
