import Foundation
import TillContract
import TillCore

/// An app the server verifies purchases for.
public struct ServerApp: Codable, Sendable, Hashable {
    public var bundleId: String
    public var appAppleId: Int64?
    public var name: String
    /// The key the app sends as `Authorization: Bearer <appKey>` (public: it identifies the app, it grants nothing).
    public var appKey: String
    /// verifyReceipt shared secrets; the first is sent, the others are accepted during a rotation.
    public var sharedSecrets: [String]
    /// App Store Server API credentials, for confirming signed transactions.
    public var apiKeyId: String?
    public var apiIssuerId: String?
    public var apiPrivateKey: String?
    /// The In-App Purchase key that signs offers; nil to sign them with the App Store Server API key (Apple allows
    /// one key for both).
    public var inAppPurchaseKeyId: String?
    public var inAppPurchaseIssuerId: String?
    public var inAppPurchasePrivateKey: String?
    /// Whether sandbox purchases are accepted at all (they are never counted as revenue).
    public var acceptSandbox: Bool
    public var restorePolicy: RestorePolicy
    /// What the server tells Apple beside the ledger when it answers a consumption request.
    public var consumption: ConsumptionSettings = ConsumptionSettings(sampleContentProvided: false)
    /// StoreKit Testing in Xcode's certificates (PEM) whose Xcode and LocalTesting data the app accepts; empty for
    /// none. They vouch for that data only, never for the sandbox or production.
    public var storeKitTestCertificates: [String] = []
    public var createdAt: Int64
}

/// A product of the server-side catalogue: what it is and what buying it gives.
public struct CatalogProduct: Codable, Sendable, Hashable {
    public var bundleId: String
    public var productId: String
    public var type: ProductType
    public var title: String
    /// Entitlements a purchase grants while it is active (`pro`, `issue-42`, …).
    public var entitlements: [String]
    /// What one unit of a consumable credits (`{"gems": 100}`).
    public var credits: [String: Int64]
    public var content: [ContentFile]
    public var subscriptionGroup: String?
    /// Non-renewing subscriptions: how long one purchase lasts (the store does not say; the server decides).
    public var durationSeconds: Int64?
    /// The list price, for the books when the purchase format carries none (receipts do not).
    public var price: Int64?
    public var currency: String?
    /// Order in the master list.
    public var position: Int
    public var createdAt: Int64
    public var updatedAt: Int64
}

/// A receipt or signed transaction an app submitted.
struct SubmissionRecord: Codable, Sendable {
    var id: String
    var bundleId: String
    var customerId: String
    var idempotencyKey: String?
    var kind: SubmissionKind
    var environment: AppStoreEnvironment
    var state: SubmissionState
    /// Attempts made to confirm it with Apple.
    var attempts: Int
    /// When its confirmation job is due, read from the job queue (`srv_jobs`) with the submission: the queue owns
    /// it, the submission's row does not keep it (see `encode(to:)`).
    var nextAttemptAt: Int64?
    var lastStatus: String?
    var lastError: String?
    /// Set while retrying: why the last attempt failed.
    var retryCause: RetryCause?
    var reason: String?
    /// The transaction ids the submission carried.
    var transactionIds: TransactionIDs
    var createdAt: Int64
    var updatedAt: Int64
    var confirmedAt: Int64?

    private enum CodingKeys: String, CodingKey {
        case id, bundleId, customerId, idempotencyKey, kind, environment, state, attempts, nextAttemptAt, lastStatus
        case lastError, retryCause, reason, transactionIds, createdAt, updatedAt, confirmedAt
    }

    /// The row's columns: everything but `nextAttemptAt`, which is the job's.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(bundleId, forKey: .bundleId)
        try container.encode(customerId, forKey: .customerId)
        try container.encodeIfPresent(idempotencyKey, forKey: .idempotencyKey)
        try container.encode(kind, forKey: .kind)
        try container.encode(environment, forKey: .environment)
        try container.encode(state, forKey: .state)
        try container.encode(attempts, forKey: .attempts)
        try container.encodeIfPresent(lastStatus, forKey: .lastStatus)
        try container.encodeIfPresent(lastError, forKey: .lastError)
        try container.encodeIfPresent(retryCause, forKey: .retryCause)
        try container.encodeIfPresent(reason, forKey: .reason)
        try container.encode(transactionIds, forKey: .transactionIds)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
        try container.encodeIfPresent(confirmedAt, forKey: .confirmedAt)
    }
}

/// One transaction of the ledger, recorded once per environment. Its states, kinds and reasons are enums, in Swift
/// and in the schema (CHECK constraints, migration 017).
struct LedgerRecord: Codable, Sendable, Equatable {
    var environment: AppStoreEnvironment
    var transactionId: String
    var bundleId: String
    var customerId: String
    var originalTransactionId: String
    var productId: String
    var productType: ProductType?
    var quantity: Int
    var purchaseDate: Int64
    var expiresDate: Int64?
    var revocationDate: Int64?
    /// Why access was taken away.
    var revocationReason: RevocationReason?
    /// For a rejection, Apple's answer (`status 21010`); for an operator's revocation, the note.
    var revocationDetail: String? = nil
    var isUpgraded: Bool
    /// The transaction is a period of an introductory offer (a free trial or an introductory price: Apple's
    /// `offerType` 1). Rows recorded before migration 014 say false.
    var introductoryOffer: Bool = false
    var ownership: Ownership
    var price: Int64?
    var currency: String?
    var storefront: String?
    var webOrderLineItemId: String?
    /// What first told the ledger of it: the submission's id, `notification:<uuid>`, `transactionHistory`, or
    /// `operator:<grant id>`; `source` says which.
    var submissionId: String
    var source: LedgerSource = .submission
    var confirmed: Bool
    var createdAt: Int64
    var updatedAt: Int64
    /// How the period was billed (`BILLED_UPFRONT`, `MONTHLY`), and for a month of a 12-month commitment its place
    /// in it and the commitment's end; nil when the data did not say (receipts, rows before migration 016).
    var billingPlanType: String? = nil
    var commitmentPeriod: Int? = nil
    var commitmentPeriods: Int? = nil
    var commitmentExpiresDate: Int64? = nil

    /// Revoked because Apple rejected a submission of it (which Apple's later word lifts), not refunded, upgraded,
    /// revoked by Apple or by an operator.
    var isRevokedByRejection: Bool { revocationDate != nil && revocationReason == .rejected }

    /// The money it was bought for, when it is revenue: production, bought (not family-shared), priced.
    var revenue: Components.Schemas.Money? {
        guard environment.isRevenue, ownership == .purchased, let price, price > 0, let currency else { return nil }
        return Components.Schemas.Money(amount: price, currency: currency)
    }
}

/// What first told the ledger of a transaction.
enum LedgerSource: String, Codable, Sendable, CaseIterable {
    /// An app's submission (or Apple's answer to it).
    case submission
    /// An App Store Server Notification carried it.
    case notification
    /// The catch-up read it in the customer's Transaction History.
    case transactionHistory
    /// An operator granted it by hand (`grant-…`): no App Store knows it.
    case `operator`
}

/// What a row of the books (`srv_finance`) records.
enum FinanceKind: String, Codable, Sendable, CaseIterable {
    /// The money paid.
    case purchase
    /// Apple refunded it (negative; prorated as Apple says).
    case refund
    /// Apple reversed the refund.
    case refundReversed
    /// Apple rejected the submission (negative).
    case revocation
    /// Apple vouched for it after a rejection: the revocation's money back.
    case restoration
}

/// The transaction ids a submission carried: an array in Swift, one JSON text column in SQL (`transaction_ids`),
/// decoded once where the row is read rather than wherever the ids are needed.
struct TransactionIDs: Codable, Sendable, Hashable {
    var ids: [String]

    init(_ ids: [String]) { self.ids = ids }

    init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        ids = try JSONDecoder().decode([String].self, from: Data(text.utf8))
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(String(decoding: try JSONEncoder().encode(ids), as: UTF8.self))
    }
}

/// One attempt to confirm a submission with Apple, as `srv_submission_attempts` keeps it: numbered from 1 for each
/// submission (a retry by an operator goes on counting), with where Apple answered from, what it said and how long it
/// took.
struct SubmissionAttemptRecord: Codable, Sendable {
    var submissionId: String
    var number: Int = 0
    var at: Int64
    var environment: AppStoreEnvironment
    /// Where the attempt left the submission.
    var outcome: SubmissionState
    var status: String?
    var error: String?
    var retryCause: RetryCause?
    /// Milliseconds Apple took (nil when not measured).
    var duration: Int64?
}

/// What the server did for a customer that changes no money, credits or access (so it is no event), kept for the
/// customer's timeline (`srv_customer_activity`).
enum CustomerActivityKind: String, Codable, Sendable, CaseIterable {
    /// A promotional offer signed for the app to present.
    case promotionalOfferSigned
    /// Introductory-offer eligibility signed.
    case introductoryEligibilitySigned
    /// Signed download links made for a product's files.
    case downloadsIssued
}

struct CustomerActivity: Codable, Sendable {
    var id: String = UUID.random().uuidString.lowercased()
    var bundleId: String
    /// The account (after aliases).
    var customerId: String
    var at: Int64
    var kind: CustomerActivityKind
    var detail: String
}
