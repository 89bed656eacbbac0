import TillCore

/// Where a submission stands on the server (`GET /v1/submissions/{id}`).
public struct SubmissionStatus: Sendable, Hashable, Codable {
    /// A submission's state, kept as a string so that states this version does not name survive.
    public struct State: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Verified locally, waiting for Apple's confirmation.
        public static let pending = State(rawValue: "pending")
        /// An attempt to confirm failed for a temporary reason; it will be tried again.
        public static let retrying = State(rawValue: "retrying")
        /// Apple confirmed it.
        public static let confirmed = State(rawValue: "confirmed")
        /// Apple refused it; what it granted was taken back.
        public static let rejected = State(rawValue: "rejected")
        /// Retries ran out; an operator can retry it.
        public static let deadLettered = State(rawValue: "deadLettered")

        /// Whether Apple's answer is in (or the server stopped asking).
        public var isSettled: Bool { self != .pending && self != .retrying }

        public init(from decoder: any Decoder) throws {
            rawValue = try decoder.singleValueContainer().decode(String.self)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }

        public var description: String { rawValue }
    }

    public var id: String
    public var state: State
    /// `appReceipt`, `transactionReceipt` or `signedTransaction`.
    public var kind: String
    public var environment: String
    /// The customer the purchases were recorded for (after aliases).
    public var customerId: String
    public var transactionIds: [String]
    public var attempts: Int
    public var nextAttemptAt: Int64?
    public var lastStatus: String?
    public var lastError: String?
    public var reason: String?
    public var createdAt: Int64
    public var confirmedAt: Int64?
}

/// What the server says a customer has (`GET /v1/customers/{id}`): unsigned, for display. Decisions about
/// content and credits come from the signed snapshot (``EntitlementStore``).
public struct CustomerAccount: Sendable, Hashable, Codable {
    public struct Entitlement: Sendable, Hashable, Codable {
        public var id: String
        public var productId: String
        public var transactionId: String
        public var environment: String
        public var expiresDate: Int64?
        public var provisional: Bool
    }

    public struct Purchase: Sendable, Hashable, Codable {
        public var transactionId: String
        public var originalTransactionId: String
        public var productId: String
        public var productType: String?
        public var environment: String
        public var quantity: Int
        public var purchaseDate: Int64
        public var expiresDate: Int64?
        public var revocationDate: Int64?
        public var revocationReason: String?
        public var confirmed: Bool
    }

    public var customerId: String
    public var entitlements: [Entitlement]
    public var balances: [String: Int64]
    public var purchases: [Purchase]
}

/// A transaction of a submission that was not credited to the customer (another customer owns it).
public struct RefusedPurchase: Sendable, Hashable, Codable {
    public var transactionId: String
    public var reason: String
}

/// The server's answer to a submission: recorded (and maybe already confirmed), with the customer's state.
public struct SubmissionAnswer: Sendable, Hashable, Codable {
    public var submission: SubmissionStatus
    public var customer: CustomerAccount
    public var refused: [RefusedPurchase]
    /// The customer's signed snapshot as the answer left the server (servers that sign snapshots send it), not
    /// yet verified: ``EntitlementStore/accept(_:)`` checks and keeps it.
    public var signedSnapshot: String?
}

/// The server's answer to a restore: the submission and everything the customer can have back.
public struct RestoreAnswer: Sendable, Hashable, Codable {
    public var submission: SubmissionStatus
    public var restored: [CustomerAccount.Purchase]
    public var customer: CustomerAccount
    /// The customer's signed snapshot after the restore, not yet verified.
    public var signedSnapshot: String?
}

/// A signed download URL for one file (`POST /v1/customers/{id}/downloads`).
public struct ContentLink: Sendable, Hashable, Codable {
    public var name: String
    public var sha256: String
    public var size: Int64
    public var contentType: String
    /// Relative to the server's base URL; works without the app key until ``expiresAt``.
    public var url: String
    /// UNIX milliseconds.
    public var expiresAt: Int64

    public var file: CatalogueFile {
        CatalogueFile(name: name, sha256: sha256, size: size, contentType: contentType)
    }
}

/// The server's answer to `GET /v1/customers/{id}/snapshot`: the signed snapshot, and its payload in the clear.
///
/// Only ``signedSnapshot`` counts: ``EntitlementStore`` verifies it and ignores ``snapshot``.
public struct SnapshotResponse: Sendable, Hashable, Codable {
    /// A compact JWS (ES256) over the snapshot.
    public var signedSnapshot: String
    /// The payload, unverified.
    public var snapshot: EntitlementSnapshot?

    public init(signedSnapshot: String, snapshot: EntitlementSnapshot?) {
        self.signedSnapshot = signedSnapshot
        self.snapshot = snapshot
    }
}
