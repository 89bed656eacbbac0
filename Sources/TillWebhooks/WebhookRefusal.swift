import TillCore
import TillLedger

/// Why the webhook room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
package enum WebhookReason: String, RefusalReason {
    case eventNotFound
    case invalidDescription
    case invalidOverlap
    case invalidReplay
    case invalidWebhookURL
    case webhookDeliveryNotFound
    case webhookEndpointNotFound
}

package typealias WebhookRefusal = Refused<WebhookReason>
