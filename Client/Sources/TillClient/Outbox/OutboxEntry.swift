import Foundation

/// A submission kept on disk until the server acknowledges it.
public struct OutboxEntry: Sendable, Hashable, Codable {
    /// The file format's version.
    public var version: Int = 1
    /// Sent with every attempt, so that the server records the submission once however often it arrives.
    public var idempotencyKey: String
    public var customerId: String
    public var evidence: PurchaseEvidence
    /// When the submission was first made (UNIX milliseconds).
    public var createdAt: Int64
    /// The store transaction it carries, when it came from one.
    public var transactionId: String?
    public var productId: String?
    /// Attempts that failed so far.
    public var attempts: Int = 0
    /// When the next attempt is due (UNIX milliseconds).
    public var nextAttemptAt: Int64
    /// Why the last attempt failed.
    public var lastError: String?

    public init(
        idempotencyKey: String,
        customerId: String,
        evidence: PurchaseEvidence,
        createdAt: Int64,
        transactionId: String? = nil,
        productId: String? = nil
    ) {
        self.idempotencyKey = idempotencyKey
        self.customerId = customerId
        self.evidence = evidence
        self.createdAt = createdAt
        self.transactionId = transactionId
        self.productId = productId
        self.nextAttemptAt = createdAt
    }
}

/// A submission the server said will never succeed, kept aside with the reason.
public struct RejectedSubmission: Sendable, Hashable, Codable {
    public var entry: OutboxEntry
    /// UNIX milliseconds.
    public var rejectedAt: Int64
    public var status: Int?
    /// The server's error code (`ownedByAnotherCustomer`, `invalidChain`, …).
    public var code: String?
    public var message: String
}

/// What became of one attempt to send an outbox entry.
public enum OutboxDelivery: Sendable, Hashable {
    /// The server recorded it; the entry is gone from the outbox.
    case acknowledged(SubmissionAnswer)
    /// Not sent, or no usable answer (unreachable, timeout, 5xx): it stays and is sent again later.
    case queued(TillClientError)
    /// The server said it will never succeed: moved to the outbox's `rejected` folder with the reason.
    case rejected(TillClientError)
}
