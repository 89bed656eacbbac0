import TillCatalogue
import TillCore
import TillLedger

/// Why the content room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
package enum ContentReason: String, RefusalReason {
    case bodyTooLarge
    case consumableContent
    case contentNotFound
    case invalidContentType
    case invalidName
    case invalidSignature
    case notEntitled
    case productNotFound
    case urlExpired
}

package typealias ContentRefusal = Refused<ContentReason>
