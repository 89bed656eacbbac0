import TillCore

/// Why the offer room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
enum OfferReason: String, RefusalReason {
    case codeExists
    case codeLimitReached
    case codeRedeemed
    case invalidCount
    case invalidOffer
    case offerCodeNotFound
    case offerExists
    case offerNotFound
    case offerNotInStorefront
    case productNotFound
}

typealias OfferRefusal = Refused<OfferReason>
