import Foundation
import TillCatalogue
import TillContract
import TillCore
import TillLedger

/// One CONSUMPTION_REQUEST Apple sent, and where the server's answer to it stands: a row of the durable queue
/// `srv_consumption_requests`, written in the notification's own database transaction, so that a restart loses no
/// request and a retried delivery adds none.
package struct ConsumptionRequestRecord: Codable, Sendable {
    package var notificationUuid: String
    package var bundleId: String
    package var environment: AppStoreEnvironment
    package var transactionId: String
    package var originalTransactionId: String?
    package var productId: String?
    /// Who owned the purchase when the request arrived (the answer looks again when it is made).
    package var customerId: String?
    /// Apple's `consumptionRequestReason`.
    package var reason: String?
    package var state: ConsumptionAnswerState
    /// Why nothing was sent, why Apple refused, or the last attempt's failure.
    package var detail: String?
    /// When Apple signed the request; `deadline` is twelve hours later.
    package var requestedAt: Int64
    package var deadline: Int64
    package var attempts: Int
    /// When its job is due, read from the job queue (`srv_jobs`) with the request; the row does not keep it (see
    /// `encode(to:)`).
    package var nextAttemptAt: Int64?
    /// The body sent (or being sent) to Apple, as JSON.
    package var body: String?
    package var sentAt: Int64?
    /// Apple's last answer: its HTTP status and `errorCode`.
    package var appleStatus: Int?
    package var appleErrorCode: Int64?
    package var createdAt: Int64
    package var updatedAt: Int64

    /// Whether the answer is still to be made.
    package var isOpen: Bool { state == .pending || state == .retrying }

    private enum CodingKeys: String, CodingKey {
        case notificationUuid, bundleId, environment, transactionId, originalTransactionId, productId, customerId
        case reason, state, detail, requestedAt, deadline, attempts, nextAttemptAt, body, sentAt, appleStatus
        case appleErrorCode, createdAt, updatedAt
    }

    /// The row's columns: everything but `nextAttemptAt`, which is the job's.
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(notificationUuid, forKey: .notificationUuid)
        try container.encode(bundleId, forKey: .bundleId)
        try container.encode(environment, forKey: .environment)
        try container.encode(transactionId, forKey: .transactionId)
        try container.encodeIfPresent(originalTransactionId, forKey: .originalTransactionId)
        try container.encodeIfPresent(productId, forKey: .productId)
        try container.encodeIfPresent(customerId, forKey: .customerId)
        try container.encodeIfPresent(reason, forKey: .reason)
        try container.encode(state, forKey: .state)
        try container.encodeIfPresent(detail, forKey: .detail)
        try container.encode(requestedAt, forKey: .requestedAt)
        try container.encode(deadline, forKey: .deadline)
        try container.encode(attempts, forKey: .attempts)
        try container.encodeIfPresent(body, forKey: .body)
        try container.encodeIfPresent(sentAt, forKey: .sentAt)
        try container.encodeIfPresent(appleStatus, forKey: .appleStatus)
        try container.encodeIfPresent(appleErrorCode, forKey: .appleErrorCode)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
    }
}

extension ConsumptionAnswer {
    /// A queued request as the admin API shows it.
    init(_ record: ConsumptionRequestRecord) {
        self.init(
            notificationUUID: record.notificationUuid,
            environment: record.environment.rawValue,
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
