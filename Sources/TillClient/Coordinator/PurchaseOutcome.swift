/// What became of a purchase (or a restored purchase) the coordinator handled.
public enum PurchaseOutcome: Sendable, Hashable {
    /// Submitted and recorded by the server, the signed snapshot refreshed, the content stored, and only then
    /// the transaction finished.
    case delivered(Delivery)
    /// The customer cancelled the payment sheet. Nothing was charged or submitted; not a failure.
    case cancelled(StoreTransaction)
    /// Waiting for someone else: Ask to Buy (a parent decides), or the store still processing. The purchase
    /// arrives later through the transaction updates.
    case pending(StoreTransaction)
    /// The store refused the payment (declined card, payments not allowed, product not for sale): nothing was
    /// charged.
    case failed(StoreTransaction, StoreError)
    /// Charged but not delivered yet: the transaction stays unfinished and is handled again at the next launch
    /// or poll, and a submission the server did not acknowledge waits in the outbox.
    case notDelivered(DeliveryFailure)

    /// The transaction it is about.
    public var transaction: StoreTransaction {
        switch self {
        case .delivered(let delivery): delivery.transaction
        case .cancelled(let transaction), .pending(let transaction), .failed(let transaction, _): transaction
        case .notDelivered(let failure): failure.transaction
        }
    }
}

/// A purchase delivered and finished.
public struct Delivery: Sendable, Hashable {
    public var transaction: StoreTransaction
    /// The server's record of the submission (nil when it was acknowledged earlier in this run).
    public var submission: SubmissionStatus?
    /// The verified snapshot fetched after the server recorded the purchase.
    public var snapshot: VerifiedSnapshot
    /// The product's files, for server-delivered products.
    public var files: [StoredFile]
}

/// Why a charged purchase is not delivered yet.
public struct DeliveryFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The step that did not succeed.
    public struct Stage: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Sending the purchase to the server.
        public static let submission = Stage(rawValue: "submission")
        /// Fetching or verifying the signed snapshot.
        public static let snapshot = Stage(rawValue: "snapshot")
        /// Reading the master list or downloading the product's files.
        public static let content = Stage(rawValue: "content")
        /// Telling the store the transaction is finished.
        public static let finish = Stage(rawValue: "finish")

        public var description: String { rawValue }
    }

    public var transaction: StoreTransaction
    public var stage: Stage
    public var error: TillClientError
    /// Whether the submission waits in the outbox to be sent again.
    public var queuedInOutbox: Bool

    /// Whether the server refused the purchase for good (a forged receipt, another customer's purchase): it will
    /// not be delivered by trying again.
    public var isRefusedByServer: Bool { stage == .submission && error.isPermanentRefusal }

    public var description: String {
        "\(transaction.productId) (\(transaction.transactionId ?? transaction.id)) not delivered at \(stage): \(error)"
    }
}

/// The outcome of a restore, for the caller that asked for it.
public enum RestoreOutcome: Sendable, Hashable {
    /// The store brought purchases back and every one was delivered and finished.
    case completed([Delivery])
    /// The store completed the restore, and there was nothing to bring back.
    case nothingToRestore
    /// The store could not restore, or some restored purchases could not be delivered (they come back later).
    case failed(RestoreFailure)
}

/// Why a restore did not complete.
public struct RestoreFailure: Error, Sendable, Hashable {
    /// The store's refusal (a deleted account, the store down), when it refused.
    public var storeError: StoreError?
    /// The store could not be reached.
    public var error: TillClientError?
    /// What was delivered anyway.
    public var delivered: [Delivery]
    /// What was not, and why.
    public var notDelivered: [DeliveryFailure]
}

/// Something that happened to a transaction in the background (transaction updates, the periodic retry).
public struct PurchaseEvent: Sendable, Hashable {
    public var outcome: PurchaseOutcome
}
