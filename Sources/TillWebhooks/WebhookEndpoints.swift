import Foundation
import HTTPTypes
import Logging
import SQLKit
import Synchronization
import TillCatalogue
import TillContract
import TillCore
import TillHTTPKit
import TillJobs
import TillLedger
import TillStorage

/// The webhook endpoints of each app (the admin API): where its events go, which types each takes, the secret that
/// signs them and its rotation, paused or not, and how its deliveries stand. `WebhookDeliveries` sends.
public struct WebhookEndpoints: Sendable {
    package let database: TillDatabase
    let store: WebhookStore
    package let catalogue: Catalogue
    package let jobs: JobQueue
    package let policy: WebhookAddressPolicy
    package let clock: ServerClock
    package let logger: Logger
    /// Moves with every change this process makes to an endpoint (the worker reads the list again at once).
    package let revision = Revision()

    package init(
        database: TillDatabase,
        catalogue: Catalogue,
        jobs: JobQueue,
        policy: WebhookAddressPolicy,
        clock: ServerClock,
        logger: Logger
    ) {
        self.database = database
        self.store = WebhookStore(database: database)
        self.catalogue = catalogue
        self.jobs = jobs
        self.policy = policy
        self.clock = clock
        self.logger = logger
    }

    /// Adds an endpoint: it receives the events recorded from now on (`replay` sends older ones). Answers it with its
    /// secret, which is shown only here and when it is rotated.
    public func create(bundleId: String, _ input: Components.Schemas.WebhookEndpointInput) async throws
        -> Components.Schemas.WebhookEndpointWithSecret
    {
        _ = try await catalogue.app(bundleId: bundleId)
        let url = try policy.check(url: input.url).absoluteString
        let description = try Self.validated(description: input.description)
        let now = clock.milliseconds
        let endpoint = try await database.transaction { db -> WebhookEndpointRecord in
            let record = WebhookEndpointRecord(
                id: "ep_" + UUID.random().uuidString.lowercased().replacingOccurrences(of: "-", with: ""),
                bundleId: bundleId,
                url: url,
                description: description,
                eventTypes: EventTypeList(Self.distinct(input.eventTypes ?? [])),
                enabled: input.enabled ?? true,
                secret: StandardWebhooks.newSecret(),
                // From now on: the events recorded before it was added are a replay's.
                dispatchedThrough: try await self.store.eventStore.lastEventSequence(on: db),
                consecutiveFailures: 0,
                createdAt: now,
                updatedAt: now
            )
            try await self.store.insert(record, on: db)
            return record
        }
        changed()
        logger.notice("webhook endpoint \(endpoint.id) of \(bundleId) added: \(endpoint.url)")
        return .init(endpoint: try await view(endpoint), secret: endpoint.secret)
    }

    /// An app's endpoints, a page at a time, oldest first.
    public func list(bundleId: String, page: PageRequest = PageRequest()) async throws -> Page<WebhookEndpointView> {
        _ = try await catalogue.app(bundleId: bundleId)
        let records = try await store.webhookEndpoints(
            bundleId: bundleId,
            after: page.after,
            limit: page.rowsToRead,
            on: store.sql
        )
        return try await page.page(
            records,
            key: { PageKey(number: $0.createdAt, text: $0.id) },
            item: view,
            total: { try await store.countWebhookEndpoints(bundleId: bundleId, on: store.sql) }
        )
    }

    public func endpoint(bundleId: String, id: String) async throws -> WebhookEndpointView {
        try await view(try await record(bundleId: bundleId, id: id, on: store.sql))
    }

    /// Changes the fields the patch gives. Enabling a paused endpoint sends what was recorded meanwhile, in order.
    public func update(bundleId: String, id: String, _ patch: Components.Schemas.WebhookEndpointPatch) async throws
        -> WebhookEndpointView
    {
        let url = try patch.url.map { try policy.check(url: $0).absoluteString }
        let description = try Self.validated(description: patch.description)
        let now = clock.milliseconds
        let updated = try await database.transaction { db -> WebhookEndpointRecord in
            var record = try await self.record(bundleId: bundleId, id: id, locking: true, on: db)
            if let url { record.url = url }
            if patch.description != nil { record.description = description }
            if let types = patch.eventTypes { record.eventTypes = EventTypeList(Self.distinct(types)) }
            if let enabled = patch.enabled { record.enabled = enabled }
            record.updatedAt = now
            try await self.store.update(record, on: db)
            return record
        }
        changed()
        return try await view(updated)
    }

    /// Removes an endpoint, with the deliveries it still had to receive and the record of those it received.
    public func delete(bundleId: String, id: String) async throws {
        try await database.transaction { db in
            _ = try await self.record(bundleId: bundleId, id: id, on: db)
            try await self.store.deleteWebhookEndpoint(id: id, on: db)
        }
        changed()
        logger.notice("webhook endpoint \(id) of \(bundleId) removed")
    }

    /// A new secret signs every delivery from now on; the previous one signs them too for `overlap` (a second
    /// rotation during the first ends the first one's previous secret at once).
    public func rotateSecret(bundleId: String, id: String, overlap: Duration) async throws
        -> Components.Schemas.WebhookSecret
    {
        guard overlap >= .zero, overlap <= .seconds(7 * 86_400) else {
            throw WebhookRefusal(.invalidOverlap, "previousSecretExpiresInSeconds is 0 to 604800")
        }
        let now = clock.milliseconds
        let rotated = try await database.transaction { db -> WebhookEndpointRecord in
            var record = try await self.record(bundleId: bundleId, id: id, locking: true, on: db)
            record.previousSecret = overlap > .zero ? record.secret : nil
            record.previousSecretExpiresAt = overlap > .zero ? now + overlap.milliseconds : nil
            record.secret = StandardWebhooks.newSecret()
            record.updatedAt = now
            try await self.store.update(record, on: db)
            return record
        }
        changed()
        logger.notice("webhook endpoint \(id) of \(bundleId): secret rotated")
        return .init(secret: rotated.secret, previousSecretExpiresAt: rotated.previousSecretExpiresAt)
    }

    // MARK: Helpers

    /// After a change: the worker reads the endpoints again.
    private func changed() {
        revision.bump()
        jobs.wake(.delivery)
    }

    /// An app's endpoint (`locking`: for a change, see `WebhookStore.webhookEndpoint(id:locking:on:)`); 404 when the
    /// app or the endpoint is unknown (read on `db`: it may be a transaction's connection).
    func record(bundleId: String, id: String, locking: Bool = false, on db: any SQLDatabase) async throws
        -> WebhookEndpointRecord
    {
        guard let record = try await store.webhookEndpoint(id: id, locking: locking, on: db),
            record.bundleId == bundleId
        else {
            _ = try await catalogue.requireApp(bundleId: bundleId, on: db)
            throw WebhookRefusal(.webhookEndpointNotFound, "\(bundleId) has no webhook endpoint \(id)")
        }
        return record
    }

    /// An endpoint as the admin API shows it, with how its deliveries stand.
    func view(_ record: WebhookEndpointRecord) async throws -> WebhookEndpointView {
        let db = store.sql
        return WebhookEndpointView(
            id: record.id,
            bundleId: record.bundleId,
            url: record.url,
            description: record.description,
            eventTypes: record.eventTypes.types,
            enabled: record.enabled,
            previousSecretExpiresAt: record.previousSecretExpiresAt.flatMap { $0 > clock.milliseconds ? $0 : nil },
            createdAt: record.createdAt,
            updatedAt: record.updatedAt,
            health: .init(
                pending: try await store.countWebhookDeliveries(endpointId: record.id, state: .pending, on: db),
                deadLettered: try await store.countWebhookDeliveries(
                    endpointId: record.id,
                    state: .deadLettered,
                    on: db
                ),
                consecutiveFailures: record.consecutiveFailures,
                lastSuccessAt: record.lastSuccessAt,
                lastFailureAt: record.lastFailureAt
            )
        )
    }

    package static func validated(description: String?) throws -> String? {
        guard let description else { return nil }
        guard description.unicodeScalars.count <= 500 else {
            throw WebhookRefusal(.invalidDescription, "description has at most 500 characters")
        }
        return description.isEmpty ? nil : description
    }

    package static func distinct(_ types: [EventType]) -> [EventType] {
        var seen: Set<EventType> = []
        return types.filter { seen.insert($0).inserted }
    }
}

/// A counter that moves with each change (read to know whether something changed since).
package final class Revision: Sendable {
    private let value = Atomic<UInt64>(0)
    package var current: UInt64 { value.load(ordering: .acquiring) }
    package func bump() { value.add(1, ordering: .releasing) }
}
