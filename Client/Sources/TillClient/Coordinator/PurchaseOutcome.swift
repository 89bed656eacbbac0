/// What became of a purchase (or a restored, renewed or revoked transaction) the coordinator handled.
public enum PurchaseOutcome: Sendable, Hashable {
    /// Submitted and recorded by the server, the signed snapshot refreshed, the content stored, and only then the
    /// transaction finished (unless the app finishes transactions itself). For a refund, a revocation or an upgraded
    /// subscription, the snapshot no longer grants what the transaction gave.
    case delivered(Delivery)
    /// The customer cancelled the payment sheet. Nothing was charged or submitted; not a failure.
    case userCancelled(productId: String)
    /// Waiting for someone else: Ask to Buy (a parent decides), or the bank's authentication. The purchase
    /// arrives later through the transaction updates, once approved.
    case pending(PendingPurchase)
    /// The store refused the payment (declined card, purchases not allowed, product not for sale, a bad offer), or
    /// declined an Ask to Buy: nothing was charged.
    case failed(productId: String, StoreError)
    /// The store's signature did not verify on the device: nothing was submitted, granted or finished.
    case unverified(StoreTransaction, StoreVerificationError)
    /// Charged but not delivered yet: the transaction stays unfinished and is handled again at the next launch
    /// or poll, and a submission the server did not acknowledge waits in the outbox.
    case notDelivered(DeliveryFailure)

    /// A store's refusal as an outcome: a cancellation is ``userCancelled(productId:)``, anything else
    /// ``failed(productId:_:)``.
    public static func refusal(productId: String, _ error: StoreError) -> PurchaseOutcome {
        error.isCancellation ? .userCancelled(productId: productId) : .failed(productId: productId, error)
    }

    /// The product it is about.
    public var productId: String {
        switch self {
        case .delivered(let delivery): delivery.transaction.productId
        case .userCancelled(let productId), .failed(let productId, _): productId
        case .pending(let pending): pending.productId
        case .unverified(let transaction, _): transaction.productId
        case .notDelivered(let failure): failure.transaction.productId
        }
    }

    /// The transaction it is about; nil when the store made none (cancelled, pending, failed).
    public var transaction: StoreTransaction? {
        switch self {
        case .delivered(let delivery): delivery.transaction
        case .unverified(let transaction, _): transaction
        case .notDelivered(let failure): failure.transaction
        case .userCancelled, .pending, .failed: nil
        }
    }

    /// The case's name, for logs.
    public var kind: String {
        switch self {
        case .delivered: "delivered"
        case .userCancelled: "userCancelled"
        case .pending: "pending"
        case .failed: "failed"
        case .unverified: "unverified"
        case .notDelivered: "notDelivered"
        }
    }
}

/// A purchase delivered (and, unless the app finishes transactions itself, finished).
public struct Delivery: Sendable, Hashable {
    public var transaction: StoreTransaction
    /// The server's record of the submission (nil when it was acknowledged earlier in this run).
    public var submission: SubmissionStatus?
    /// The verified snapshot fetched after the server recorded the purchase.
    public var snapshot: VerifiedSnapshot
    /// The product's files, for server-delivered products.
    public var files: [StoredFile]
    /// Whether the coordinator finished the transaction (false when the app finishes it, or when the store did not
    /// wait for a finish: a transaction read back from the account's history).
    public var finished: Bool
}

/// Why a charged purchase is not delivered yet.
public struct DeliveryFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The step that did not succeed.
    public enum Stage: String, Sendable, Hashable, CustomStringConvertible {
        /// Sending the purchase to the server.
        case submission
        /// Fetching or verifying the signed snapshot.
        case snapshot
        /// Reading the master list or downloading the product's files.
        case content
        /// Telling the store the transaction is finished.
        case finish

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
        "\(transaction.productId) (\(transaction.transactionId)) not delivered at \(stage): \(error)"
    }
}

/// The outcome of a restore, for the caller that asked for it.
public enum RestoreOutcome: Sendable, Hashable {
    /// The store brought purchases back and every one was delivered.
    case completed([Delivery])
    /// The store completed the restore, and there was nothing to bring back.
    case nothingToRestore
    /// The store could not restore, or some restored purchases could not be delivered (they come back later).
    case failed(RestoreFailure)
}

/// Why a restore did not complete.
public struct RestoreFailure: Error, Sendable, Hashable {
    /// The store's refusal (the customer cancelled signing in, a deleted account, the store down), when it refused.
    public var storeError: StoreError?
    /// The store or the server could not be reached.
    public var error: TillClientError?
    /// What was delivered anyway.
    public var delivered: [Delivery]
    /// What was not, and why.
    public var notDelivered: [DeliveryFailure]
    /// Restored transactions whose signature did not verify on the device.
    public var unverified: [StoreTransaction]

    public init(
        storeError: StoreError? = nil,
        error: TillClientError? = nil,
        delivered: [Delivery] = [],
        notDelivered: [DeliveryFailure] = [],
        unverified: [StoreTransaction] = []
    ) {
        self.storeError = storeError
        self.error = error
        self.delivered = delivered
        self.notDelivered = notDelivered
        self.unverified = unverified
    }
}

/// Something that happened in the background (transaction updates, the periodic retry).
public struct PurchaseEvent: Sendable, Hashable {
    public var outcome: PurchaseOutcome
}

/// What ``PurchaseCoordinator/start()`` found and did at launch.
public struct LaunchReport: Sendable, Hashable {
    /// The snapshot on disk: verified, missing, rejected (then a fresh one was fetched if possible).
    public var storedSnapshot: SnapshotLoad
    /// The snapshot in use after launch, if any.
    public var snapshot: VerifiedSnapshot?
    /// Submissions the outbox sent again.
    public var resent: [OutboxDelivery]
    /// The unfinished transactions the store handed back, and what became of each.
    public var transactions: [PurchaseOutcome]
    /// The AppTransaction: sent now, sent by an earlier launch, unavailable (StoreKit 1), or why not yet.
    public var appTransaction: AppTransactionDelivery
}
