import TillCore

/// Why the subscription room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
enum SubscriptionReason: String, RefusalReason {
    case alreadyRevoked
    case appNotFound
    case invalidPercentage
    case invalidPrice
    case invalidReason
    case invalidStorefront
    case noPendingPriceIncrease
    case noRefundRequest
    case notFamilyShared
    case notRefunded
    case productNotFound
    case subscriptionNotFound
    case transactionNotFound
}

typealias SubscriptionRefusal = Refused<SubscriptionReason>
