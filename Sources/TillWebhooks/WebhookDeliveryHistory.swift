import HTTPTypes
import TillContract
import TillCore
import TillHTTPKit
import TillLedger
import TillStorage

/// What the operator reads of an endpoint's deliveries (the admin API's `…/webhooks/{id}/deliveries`): pages of them,
/// newest first, and one with every attempt. Delivering them is `WebhookDeliveries`'s.
public struct WebhookDeliveryHistory: Sendable {
    let store: WebhookStore
    let endpoints: WebhookEndpoints

    package init(database: TillDatabase, endpoints: WebhookEndpoints) {
        self.store = WebhookStore(database: database)
        self.endpoints = endpoints
    }

    /// An endpoint's deliveries, newest first, one page; of one state or all.
    public func deliveries(
        bundleId: String,
        endpointId: String,
        state: WebhookDeliveryState?,
        page: PageRequest = PageRequest()
    ) async throws -> Page<WebhookDeliveryView> {
        _ = try await endpoints.record(bundleId: bundleId, id: endpointId, on: store.sql)
        let records = try await store.webhookDeliveries(
            endpointId: endpointId,
            state: state,
            before: page.after,
            limit: page.rowsToRead,
            on: store.sql
        )
        return try await page.page(
            records,
            key: { PageKey(number: $0.createdAt, text: $0.id) },
            item: WebhookDeliveryView.init,
            total: { try await store.countWebhookDeliveries(endpointId: endpointId, state: state, on: store.sql) }
        )
    }

    /// One delivery with every attempt.
    public func delivery(bundleId: String, endpointId: String, id: String) async throws
        -> Components.Schemas.WebhookDeliveryDetail
    {
        _ = try await endpoints.record(bundleId: bundleId, id: endpointId, on: store.sql)
        guard let record = try await store.webhookDelivery(id: id, on: store.sql), record.endpointId == endpointId
        else {
            throw WebhookRefusal(.webhookDeliveryNotFound, "endpoint \(endpointId) has no delivery \(id)")
        }
        var attempts = try await store.webhookAttempts(deliveryId: id, on: store.sql).map(WebhookAttemptView.init)
        if record.state == .delivered, let last = WebhookDeliveryView(record).lastAttempt {
            attempts.append(last)  // the attempt that delivered it is the delivery's last
        }
        return .init(delivery: WebhookDeliveryView(record), attempts: attempts)
    }
}
