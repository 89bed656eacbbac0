import Foundation
import TillContract
import TillCore
import TillLedger

/// A webhook endpoint of an app, as `srv_webhook_endpoints` keeps it.
package struct WebhookEndpointRecord: Codable, Sendable {
    package var id: String
    package var bundleId: String
    package var url: String
    package var description: String?
    /// The event types it receives; empty for all.
    package var eventTypes: EventTypeList
    /// A paused endpoint is sent nothing and loses nothing: its deliveries are made once it is enabled again.
    package var enabled: Bool
    /// `whsec_…`, which signs every delivery.
    package var secret: String
    /// During a rotation, the secret before, which also signs deliveries until `previousSecretExpiresAt`.
    package var previousSecret: String?
    package var previousSecretExpiresAt: Int64?
    /// The last event (its sequence) made into deliveries for it, or passed over (another type, another app).
    package var dispatchedThrough: Int64
    package var consecutiveFailures: Int
    package var lastSuccessAt: Int64?
    package var lastFailureAt: Int64?
    package var createdAt: Int64
    package var updatedAt: Int64

    /// Whether it receives events of this type.
    package func accepts(_ type: EventType) -> Bool { eventTypes.types.isEmpty || eventTypes.types.contains(type) }

    /// The secrets that sign a delivery at `now`: the secret, and the previous one during a rotation.
    package func signingSecrets(at now: Int64) -> [String] {
        guard let previousSecret, let until = previousSecretExpiresAt, until > now else { return [secret] }
        return [secret, previousSecret]
    }
}

/// A list of event types: an array in Swift, one JSON text column in SQL.
package struct EventTypeList: Codable, Sendable, Hashable {
    package var types: [EventType]

    package init(_ types: [EventType]) { self.types = types }

    package init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        types = try JSONDecoder().decode([EventType].self, from: Data(text.utf8))
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(String(decoding: try JSONEncoder().encode(types), as: UTF8.self))
    }
}

/// One event to deliver to one endpoint, as `srv_webhook_deliveries` keeps it; its schedule is its `delivery` job's.
package struct WebhookDeliveryRecord: Codable, Sendable {
    package var id: String
    package var endpointId: String
    package var bundleId: String
    package var eventSequence: Int64
    package var eventId: String
    package var eventType: EventType
    package var customerId: String?
    package var state: WebhookDeliveryState
    package var attempts: Int
    /// Queued by an operator's replay.
    package var replay: Bool
    /// When retrying stops and it is dead-lettered.
    package var deadline: Int64
    package var deliveredAt: Int64?
    package var lastAttemptAt: Int64?
    package var lastStatus: Int?
    package var lastError: String?
    package var lastAnswer: String?
    package var lastUrl: String?
    package var lastDuration: Int64?
    package var createdAt: Int64
    package var updatedAt: Int64
    /// When its job is due, read from the job queue with it; the row does not keep it.
    package var nextAttemptAt: Int64? = nil

    private enum CodingKeys: String, CodingKey {
        case id, endpointId, bundleId, eventSequence, eventId, eventType, customerId, state, attempts, replay
        case deadline, deliveredAt, lastAttemptAt, lastStatus, lastError, lastAnswer, lastUrl, lastDuration
        case createdAt, updatedAt, nextAttemptAt
    }

    /// The row's columns: everything but `nextAttemptAt`, which is the job's.
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(endpointId, forKey: .endpointId)
        try container.encode(bundleId, forKey: .bundleId)
        try container.encode(eventSequence, forKey: .eventSequence)
        try container.encode(eventId, forKey: .eventId)
        try container.encode(eventType, forKey: .eventType)
        try container.encodeIfPresent(customerId, forKey: .customerId)
        try container.encode(state, forKey: .state)
        try container.encode(attempts, forKey: .attempts)
        try container.encode(replay, forKey: .replay)
        try container.encode(deadline, forKey: .deadline)
        try container.encodeIfPresent(deliveredAt, forKey: .deliveredAt)
        try container.encodeIfPresent(lastAttemptAt, forKey: .lastAttemptAt)
        try container.encodeIfPresent(lastStatus, forKey: .lastStatus)
        try container.encodeIfPresent(lastError, forKey: .lastError)
        try container.encodeIfPresent(lastAnswer, forKey: .lastAnswer)
        try container.encodeIfPresent(lastUrl, forKey: .lastUrl)
        try container.encodeIfPresent(lastDuration, forKey: .lastDuration)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
    }

    /// The stream its job belongs to: one customer's deliveries to one endpoint go out one at a time, in order.
    package var stream: String? { customerId.map { "\(endpointId):\($0)" } }
}

/// One attempt of a delivery, as `srv_webhook_attempts` keeps it.
package struct WebhookAttemptRecord: Codable, Sendable {
    package var deliveryId: String
    package var attempt: Int
    package var at: Int64
    package var url: String
    package var status: Int?
    package var answer: String?
    package var error: String?
    package var duration: Int64?
}

extension WebhookAttemptView {
    package init(_ record: WebhookAttemptRecord) {
        self.init(
            attempt: record.attempt,
            at: record.at,
            url: record.url,
            status: record.status,
            answer: record.answer,
            error: record.error,
            durationMilliseconds: record.duration
        )
    }
}

extension WebhookDeliveryView {
    package init(_ record: WebhookDeliveryRecord) {
        self.init(
            id: record.id,
            endpointId: record.endpointId,
            eventId: record.eventId,
            eventType: record.eventType,
            sequence: record.eventSequence,
            customerId: record.customerId,
            state: record.state,
            attempts: record.attempts,
            nextAttemptAt: record.state == .pending ? record.nextAttemptAt : nil,
            deliveredAt: record.deliveredAt,
            lastAttempt: record.lastAttemptAt.map { at in
                WebhookAttemptView(
                    attempt: record.attempts,
                    at: at,
                    url: record.lastUrl ?? "",
                    status: record.lastStatus,
                    answer: record.lastAnswer,
                    error: record.lastError,
                    durationMilliseconds: record.lastDuration
                )
            },
            replay: record.replay,
            createdAt: record.createdAt,
            updatedAt: record.updatedAt
        )
    }
}
