import TillCore

/// Why the appstoreconnect room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
enum AppStoreConnectReason: String, RefusalReason {
    case accountNotFound
    case appExists
    case environmentIsFixed
    case invalidBillingPlan
    case invalidBundleId
    case invalidEnvironment
    case invalidGracePeriod
    case invalidGroupLevel
    case invalidPrice
    case invalidProductId
    case invalidProductType
    case invalidStorefront
    case invalidURL
    case invalidVendorIdentifier
    case notASubscription
    case productExists
    case productNotFound
    case subscriptionNeedsGroup
    case typeIsFixed
}

typealias AppStoreConnectRefusal = Refused<AppStoreConnectReason>
