import Foundation
import TillContract

/// One CONSUMPTION_REQUEST Apple sent, and where the server's answer to it stands: a row of the durable queue
/// `srv_consumption_requests`, written in the notification's own database transaction, so that a restart loses no
/// request and a retried delivery adds none.
struct ConsumptionRequestRecord: Codable, Sendable {
    var notificationUuid: String
    var bundleId: String
    var environment: String
    var transactionId: String
    var originalTransactionId: String?
    var productId: String?
    /// Who owned the purchase when the request arrived (the answer looks again when it is made).
    var customerId: String?
    /// Apple's `consumptionRequestReason`.
    var reason: String?
    var state: ConsumptionAnswerState
    /// Why nothing was sent, why Apple refused, or the last attempt's failure.
    var detail: String?
    /// When Apple signed the request; `deadline` is twelve hours later.
    var requestedAt: Int64
    var deadline: Int64
    var attempts: Int
    var nextAttemptAt: Int64?
    /// Held by a worker until then (several servers may share the queue on PostgreSQL).
    var claimedUntil: Int64?
    /// The body sent (or being sent) to Apple, as JSON.
    var body: String?
    var sentAt: Int64?
    /// Apple's last answer: its HTTP status and `errorCode`.
    var appleStatus: Int?
    var appleErrorCode: Int64?
    var createdAt: Int64
    var updatedAt: Int64

    /// Whether the answer is still to be made.
    var isOpen: Bool { state == .pending || state == .retrying }
}

extension ConsumptionAnswer {
    /// A queued request as the admin API shows it.
    init(_ record: ConsumptionRequestRecord) {
        self.init(
            notificationUUID: record.notificationUuid,
            environment: record.environment,
            transactionId: record.transactionId,
            originalTransactionId: record.originalTransactionId,
            productId: record.productId,
            customerId: record.customerId,
            reason: record.reason,
            state: record.state,
            detail: record.detail,
            requestedAt: record.requestedAt,
            deadline: record.deadline,
            attempts: record.attempts,
            nextAttemptAt: record.isOpen ? record.nextAttemptAt : nil,
            sent: record.body.flatMap {
                try? JSONDecoder().decode(Components.Schemas.ConsumptionInformation.self, from: Data($0.utf8))
            },
            sentAt: record.sentAt,
            appleStatus: record.appleStatus,
            appleErrorCode: record.appleErrorCode,
            createdAt: record.createdAt,
            updatedAt: record.updatedAt
        )
    }
}
