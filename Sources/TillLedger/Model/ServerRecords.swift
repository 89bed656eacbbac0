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

    package init(
        bundleId: String,
        appAppleId: Int64? = nil,
        name: String,
        appKey: String,
        sharedSecrets: [String],
        apiKeyId: String? = nil,
        apiIssuerId: String? = nil,
        apiPrivateKey: String? = nil,
        inAppPurchaseKeyId: String? = nil,
        inAppPurchaseIssuerId: String? = nil,
        inAppPurchasePrivateKey: String? = nil,
        acceptSandbox: Bool,
        restorePolicy: RestorePolicy,
        consumption: ConsumptionSettings = ConsumptionSettings(sampleContentProvided: false),
        storeKitTestCertificates: [String] = [],
        createdAt: Int64
    ) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.name = name
        self.appKey = appKey
        self.sharedSecrets = sharedSecrets
        self.apiKeyId = apiKeyId
        self.apiIssuerId = apiIssuerId
        self.apiPrivateKey = apiPrivateKey
        self.inAppPurchaseKeyId = inAppPurchaseKeyId
        self.inAppPurchaseIssuerId = inAppPurchaseIssuerId
        self.inAppPurchasePrivateKey = inAppPurchasePrivateKey
        self.acceptSandbox = acceptSandbox
        self.restorePolicy = restorePolicy
        self.consumption = consumption
        self.storeKitTestCertificates = storeKitTestCertificates
        self.createdAt = createdAt
    }
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

    package init(
        bundleId: String,
        productId: String,
        type: ProductType,
        title: String,
        entitlements: [String],
        credits: [String: Int64],
        content: [ContentFile],
        subscriptionGroup: String? = nil,
        durationSeconds: Int64? = nil,
        price: Int64? = nil,
        currency: String? = nil,
        position: Int,
        createdAt: Int64,
        updatedAt: Int64
    ) {
        self.bundleId = bundleId
        self.productId = productId
        self.type = type
        self.title = title
        self.entitlements = entitlements
        self.credits = credits
        self.content = content
        self.subscriptionGroup = subscriptionGroup
        self.durationSeconds = durationSeconds
        self.price = price
        self.currency = currency
        self.position = position
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A receipt or signed transaction an app submitted.
package struct SubmissionRecord: Codable, Sendable {
    package var id: String
    package var bundleId: String
    package var customerId: String
    package var idempotencyKey: String?
    package var kind: SubmissionKind
    package var environment: AppStoreEnvironment
    package var state: SubmissionState
    /// Attempts made to confirm it with Apple.
    package var attempts: Int
    /// When its confirmation job is due, read from the job queue (`srv_jobs`) with the submission: the queue owns
    /// it, the submission's row does not keep it (see `encode(to:)`).
    package var nextAttemptAt: Int64?
    package var lastStatus: String?
    package var lastError: String?
    /// Set while retrying: why the last attempt failed.
    package var retryCause: RetryCause?
    package var reason: String?
    /// The transaction ids the submission carried.
    package var transactionIds: TransactionIDs
    package var createdAt: Int64
    package var updatedAt: Int64
    package var confirmedAt: Int64?

    private enum CodingKeys: String, CodingKey {
        case id, bundleId, customerId, idempotencyKey, kind, environment, state, attempts, nextAttemptAt, lastStatus
        case lastError, retryCause, reason, transactionIds, createdAt, updatedAt, confirmedAt
    }

    /// The row's columns: everything but `nextAttemptAt`, which is the job's.
    package func encode(to encoder: any Encoder) throws {
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

    package init(
        id: String,
        bundleId: String,
        customerId: String,
        idempotencyKey: String? = nil,
        kind: SubmissionKind,
        environment: AppStoreEnvironment,
        state: SubmissionState,
        attempts: Int,
        nextAttemptAt: Int64? = nil,
        lastStatus: String? = nil,
        lastError: String? = nil,
        retryCause: RetryCause? = nil,
        reason: String? = nil,
        transactionIds: TransactionIDs,
        createdAt: Int64,
        updatedAt: Int64,
        confirmedAt: Int64? = nil
    ) {
        self.id = id
        self.bundleId = bundleId
        self.customerId = customerId
        self.idempotencyKey = idempotencyKey
        self.kind = kind
        self.environment = environment
        self.state = state
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.retryCause = retryCause
        self.reason = reason
        self.transactionIds = transactionIds
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.confirmedAt = confirmedAt
    }
}

/// One transaction of the ledger, recorded once per environment. Its states, kinds and reasons are enums, in Swift
/// and in the schema (CHECK constraints, migration 017).
package struct LedgerRecord: Codable, Sendable, Equatable {
    package var environment: AppStoreEnvironment
    package var transactionId: String
    package var bundleId: String
    package var customerId: String
    package var originalTransactionId: String
    package var productId: String
    package var productType: ProductType?
    package var quantity: Int
    package var purchaseDate: Int64
    package var expiresDate: Int64?
    package var revocationDate: Int64?
    /// Why access was taken away.
    package var revocationReason: RevocationReason?
    /// For a rejection, Apple's answer (`status 21010`); for an operator's revocation, the note.
    package var revocationDetail: String? = nil
    package var isUpgraded: Bool
    /// The transaction is a period of an introductory offer (a free trial or an introductory price: Apple's
    /// `offerType` 1). Rows recorded before migration 014 say false.
    package var introductoryOffer: Bool = false
    package var ownership: Ownership
    package var price: Int64?
    package var currency: String?
    package var storefront: String?
    package var webOrderLineItemId: String?
    /// What first told the ledger of it: the submission's id, `notification:<uuid>`, `transactionHistory`, or
    /// `operator:<grant id>`; `source` says which.
    package var submissionId: String
    package var source: LedgerSource = .submission
    package var confirmed: Bool
    package var createdAt: Int64
    package var updatedAt: Int64
    /// How the period was billed (`BILLED_UPFRONT`, `MONTHLY`), and for a month of a 12-month commitment its place
    /// in it and the commitment's end; nil when the data did not say (receipts, rows before migration 016).
    package var billingPlanType: String? = nil
    package var commitmentPeriod: Int? = nil
    package var commitmentPeriods: Int? = nil
    package var commitmentExpiresDate: Int64? = nil

    /// Revoked because Apple rejected a submission of it (which Apple's later word lifts), not refunded, upgraded,
    /// revoked by Apple or by an operator.
    package var isRevokedByRejection: Bool { revocationDate != nil && revocationReason == .rejected }

    /// The money it was bought for, when it is revenue: production, bought (not family-shared), priced.
    package var revenue: Components.Schemas.Money? {
        guard environment.isRevenue, ownership == .purchased, let price, price > 0, let currency else { return nil }
        return Components.Schemas.Money(amount: price, currency: currency)
    }

    package init(
        environment: AppStoreEnvironment,
        transactionId: String,
        bundleId: String,
        customerId: String,
        originalTransactionId: String,
        productId: String,
        productType: ProductType? = nil,
        quantity: Int,
        purchaseDate: Int64,
        expiresDate: Int64? = nil,
        revocationDate: Int64? = nil,
        revocationReason: RevocationReason? = nil,
        revocationDetail: String? = nil,
        isUpgraded: Bool,
        introductoryOffer: Bool = false,
        ownership: Ownership,
        price: Int64? = nil,
        currency: String? = nil,
        storefront: String? = nil,
        webOrderLineItemId: String? = nil,
        submissionId: String,
        source: LedgerSource = .submission,
        confirmed: Bool,
        createdAt: Int64,
        updatedAt: Int64,
        billingPlanType: String? = nil,
        commitmentPeriod: Int? = nil,
        commitmentPeriods: Int? = nil,
        commitmentExpiresDate: Int64? = nil
    ) {
        self.environment = environment
        self.transactionId = transactionId
        self.bundleId = bundleId
        self.customerId = customerId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.productType = productType
        self.quantity = quantity
        self.purchaseDate = purchaseDate
        self.expiresDate = expiresDate
        self.revocationDate = revocationDate
        self.revocationReason = revocationReason
        self.revocationDetail = revocationDetail
        self.isUpgraded = isUpgraded
        self.introductoryOffer = introductoryOffer
        self.ownership = ownership
        self.price = price
        self.currency = currency
        self.storefront = storefront
        self.webOrderLineItemId = webOrderLineItemId
        self.submissionId = submissionId
        self.source = source
        self.confirmed = confirmed
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.billingPlanType = billingPlanType
        self.commitmentPeriod = commitmentPeriod
        self.commitmentPeriods = commitmentPeriods
        self.commitmentExpiresDate = commitmentExpiresDate
    }
}

/// What first told the ledger of a transaction.
package enum LedgerSource: String, Codable, Sendable, CaseIterable {
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
package enum FinanceKind: String, Codable, Sendable, CaseIterable {
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
package struct TransactionIDs: Codable, Sendable, Hashable {
    package var ids: [String]

    package init(_ ids: [String]) { self.ids = ids }

    package init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        ids = try JSONDecoder().decode([String].self, from: Data(text.utf8))
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(String(decoding: try JSONEncoder().encode(ids), as: UTF8.self))
    }
}

/// One attempt to confirm a submission with Apple, as `srv_submission_attempts` keeps it: numbered from 1 for each
/// submission (a retry by an operator goes on counting), with where Apple answered from, what it said and how long it
/// took.
package struct SubmissionAttemptRecord: Codable, Sendable {
    package var submissionId: String
    package var number: Int = 0
    package var at: Int64
    package var environment: AppStoreEnvironment
    /// Where the attempt left the submission.
    package var outcome: SubmissionState
    package var status: String?
    package var error: String?
    package var retryCause: RetryCause?
    /// Milliseconds Apple took (nil when not measured).
    package var duration: Int64?

    package init(
        submissionId: String,
        number: Int = 0,
        at: Int64,
        environment: AppStoreEnvironment,
        outcome: SubmissionState,
        status: String? = nil,
        error: String? = nil,
        retryCause: RetryCause? = nil,
        duration: Int64? = nil
    ) {
        self.submissionId = submissionId
        self.number = number
        self.at = at
        self.environment = environment
        self.outcome = outcome
        self.status = status
        self.error = error
        self.retryCause = retryCause
        self.duration = duration
    }
}

/// What the server did for a customer that changes no money, credits or access (so it is no event), kept for the
/// customer's timeline (`srv_customer_activity`).
package enum CustomerActivityKind: String, Codable, Sendable, CaseIterable {
    /// A promotional offer signed for the app to present.
    case promotionalOfferSigned
    /// Introductory-offer eligibility signed.
    case introductoryEligibilitySigned
    /// Signed download links made for a product's files.
    case downloadsIssued
}

package struct CustomerActivity: Codable, Sendable {
    package var id: String = UUID.random().uuidString.lowercased()
    package var bundleId: String
    /// The account (after aliases).
    package var customerId: String
    package var at: Int64
    package var kind: CustomerActivityKind
    package var detail: String

    package init(
        id: String = UUID.random().uuidString.lowercased(),
        bundleId: String,
        customerId: String,
        at: Int64,
        kind: CustomerActivityKind,
        detail: String
    ) {
        self.id = id
        self.bundleId = bundleId
        self.customerId = customerId
        self.at = at
        self.kind = kind
        self.detail = detail
    }
}
