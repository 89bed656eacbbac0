import TillCore
import TillLedger

/// Why the catalogue room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
package enum CatalogueReason: String, RefusalReason {
    case appExists
    case appNotFound
    case bundleIdImmutable
    case consumableEntitlements
    case durationRequired
    case invalidAPIKey
    case invalidBundleId
    case invalidCredits
    case invalidCurrency
    case invalidEntitlement
    case invalidInAppPurchaseKey
    case invalidPrice
    case invalidProductId
    case invalidStoreKitTestCertificate
}

package typealias CatalogueRefusal = Refused<CatalogueReason>
