import Foundation
import TillContract
import TillCore
import TillLedger

/// A webhook endpoint of an app, as `srv_webhook_endpoints` keeps it.
struct WebhookEndpointRecord: Codable, Sendable {
    var id: String
    var bundleId: String
    var url: String
    var description: String?
    /// The event types it receives; empty for all.
    var eventTypes: EventTypeList
    /// A paused endpoint is sent nothing and loses nothing: its deliveries are made once it is enabled again.
    var enabled: Bool
    /// `whsec_…`, which signs every delivery.
    var secret: String
    /// During a rotation, the secret before, which also signs deliveries until `previousSecretExpiresAt`.
    var previousSecret: String?
    var previousSecretExpiresAt: Int64?
    /// The last event (its sequence) made into deliveries for it, or passed over (another type, another app).
    var dispatchedThrough: Int64
    var consecutiveFailures: Int
    var lastSuccessAt: Int64?
    var lastFailureAt: Int64?
    var createdAt: Int64
    var updatedAt: Int64

    /// Whether it receives events of this type.
    func accepts(_ type: EventType) -> Bool { eventTypes.types.isEmpty || eventTypes.types.contains(type) }

    /// The secrets that sign a delivery at `now`: the secret, and the previous one during a rotation.
    func signingSecrets(at now: Int64) -> [String] {
        guard let previousSecret, let until = previousSecretExpiresAt, until > now else { return [secret] }
        return [secret, previousSecret]
    }
}

/// A list of event types: an array in Swift, one JSON text column in SQL.
struct EventTypeList: Codable, Sendable, Hashable {
    var types: [EventType]

    init(_ types: [EventType]) { self.types = types }

    init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        types = try JSONDecoder().decode([EventType].self, from: Data(text.utf8))
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(String(decoding: try JSONEncoder().encode(types), as: UTF8.self))
    }
}

/// One event to deliver to one endpoint, as `srv_webhook_deliveries` keeps it; its schedule is its `delivery` job's.
struct WebhookDeliveryRecord: Codable, Sendable {
    var id: String
    var endpointId: String
    var bundleId: String
    var eventSequence: Int64
    var eventId: String
    var eventType: EventType
    var customerId: String?
    var state: WebhookDeliveryState
    var attempts: Int
    /// Queued by an operator's replay.
    var replay: Bool
    /// When retrying stops and it is dead-lettered.
    var deadline: Int64
    var deliveredAt: Int64?
    var lastAttemptAt: Int64?
    var lastStatus: Int?
    var lastError: String?
    var lastAnswer: String?
    var lastUrl: String?
    var lastDuration: Int64?
    var createdAt: Int64
    var updatedAt: Int64
    /// When its job is due, read from the job queue with it; the row does not keep it.
    var nextAttemptAt: Int64? = nil

    private enum CodingKeys: String, CodingKey {
        case id, endpointId, bundleId, eventSequence, eventId, eventType, customerId, state, attempts, replay
        case deadline, deliveredAt, lastAttemptAt, lastStatus, lastError, lastAnswer, lastUrl, lastDuration
        case createdAt, updatedAt, nextAttemptAt
    }

    /// The row's columns: everything but `nextAttemptAt`, which is the job's.
    func encode(to encoder: any Encoder) throws {
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
    var stream: String? { customerId.map { "\(endpointId):\($0)" } }
}

/// One attempt of a delivery, as `srv_webhook_attempts` keeps it.
struct WebhookAttemptRecord: Codable, Sendable {
    var deliveryId: String
    var attempt: Int
    var at: Int64
    var url: String
    var status: Int?
    var answer: String?
    var error: String?
    var duration: Int64?
}

extension WebhookAttemptView {
    init(_ record: WebhookAttemptRecord) {
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
    init(_ record: WebhookDeliveryRecord) {
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
