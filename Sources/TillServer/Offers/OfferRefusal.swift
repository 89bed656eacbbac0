import TillCatalogue
import TillCore
import TillLedger

/// Why the offer room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
enum OfferReason: String, RefusalReason {
    case appAccountTokenWithJWS
    case appTransactionIdRequired
    case invalidAppAccountToken
    case invalidAppTransactionId
    case invalidOfferIdentifier
    case noSigningKey
    case notASubscription
    case notEligible
    case offerNotFound
    case overrideNotFound
    case productNotFound
    case subscriptionGroupNotFound
}

typealias OfferRefusal = Refused<OfferReason>
