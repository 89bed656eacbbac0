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
    var environment: String
    var state: SubmissionState
    var attempts: Int
    var nextAttemptAt: Int64?
    var lastStatus: String?
    var lastError: String?
    /// Set while retrying: why the last attempt failed.
    var retryCause: RetryCause?
    var reason: String?
    /// The transaction ids the submission carried.
    var transactionIds: TransactionIDs
    var claimedUntil: Int64?
    var createdAt: Int64
    var updatedAt: Int64
    var confirmedAt: Int64?
}

/// One transaction of the ledger, recorded once per environment.
struct LedgerRecord: Codable, Sendable {
    var environment: String
    var transactionId: String
    var bundleId: String
    var customerId: String
    var originalTransactionId: String
    var productId: String
    var productType: String?
    var quantity: Int
    var purchaseDate: Int64
    var expiresDate: Int64?
    var revocationDate: Int64?
    /// Why access was taken away: `refund`, `apple:21003`, `upgraded`, …
    var revocationReason: String?
    var isUpgraded: Bool
    /// The transaction is a period of an introductory offer (a free trial or an introductory price: Apple's
    /// `offerType` 1). Rows recorded before migration 014 say false.
    var introductoryOffer: Bool = false
    var ownership: String
    var price: Int64?
    var currency: String?
    var storefront: String?
    var webOrderLineItemId: String?
    var submissionId: String
    var confirmed: Bool
    var createdAt: Int64
    var updatedAt: Int64
    /// How the period was billed (`BILLED_UPFRONT`, `MONTHLY`), and for a month of a 12-month commitment its place
    /// in it and the commitment's end; nil when the data did not say (receipts, rows before migration 016).
    var billingPlanType: String? = nil
    var commitmentPeriod: Int? = nil
    var commitmentPeriods: Int? = nil
    var commitmentExpiresDate: Int64? = nil
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
