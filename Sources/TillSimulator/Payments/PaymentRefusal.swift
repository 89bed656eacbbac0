import TillCore

/// Why the payment room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
enum PaymentReason: String, RefusalReason {
    case accountDeleted
    case cannotComplete
    case deviceNotFound
    case inconsistentSubscription
    case invalidUserAction
    case notDeferred
    case notFinishable
    case paymentNotFound
    case queueEntryNotFound
    case receiptNotSimulated
    case storeUnavailable
    case subscriptionNotFound
    case wrongEnvironment
}

typealias PaymentRefusal = Refused<PaymentReason>
