import Foundation

/// What the store decided about a payment (StoreKit 2's `Product.PurchaseResult`). A refusal (a declined card,
/// purchases not allowed, a bad offer) is thrown as a ``StoreError`` instead.
public enum StorePurchaseResult: Sendable, Hashable {
    /// Charged: the transaction, verified or not.
    case success(StoreVerification<StoreTransaction>)
    /// The customer cancelled the payment sheet.
    case userCancelled
    /// Waiting for someone else: Ask to Buy, or Strong Customer Authentication. The purchase arrives later through
    /// the transaction updates, if it is approved.
    case pending(PendingPurchase)
}

/// A payment waiting for approval.
public struct PendingPurchase: Sendable, Hashable {
    public var productId: String
    public var quantity: Int
    /// The store's handle for the waiting payment, when it gives one (the simulator's payment id, which its admin
    /// API approves or declines).
    public var paymentId: String?

    public init(productId: String, quantity: Int = 1, paymentId: String? = nil) {
        self.productId = productId
        self.quantity = quantity
        self.paymentId = paymentId
    }
}

/// Something the store reports by itself (StoreKit 2's `Transaction.updates` and `Transaction.unfinished`,
/// StoreKit 1's payment queue observer).
public enum StoreUpdate: Sendable, Hashable {
    /// A transaction to deliver and finish: a purchase approved after Ask to Buy, a renewal, a purchase on another
    /// device or shared by the family, a refund or revocation, an upgrade, one left unfinished by an earlier run.
    case transaction(StoreVerification<StoreTransaction>)
    /// A payment the store failed outside ``TillStorefront/purchase(_:)`` (Ask to Buy declined: StoreKit 1 and the
    /// simulator say so; StoreKit 2 says nothing). The storefront has finished it: nothing was charged.
    case failed(productId: String, StoreError)

    /// The transaction it carries, verified or not; nil for a failure.
    public var transaction: StoreTransaction? {
        if case .transaction(let verification) = self { return verification.unsafePayloadValue }
        return nil
    }
}

/// The outcome of restoring purchases (StoreKit 1's `restoreCompletedTransactions()`, StoreKit 2's
/// `AppStore.sync()` and then the current entitlements).
public enum StorefrontRestore: Sendable, Hashable {
    /// The store brought purchases back; each is delivered like a purchase.
    case restored([StoreVerification<StoreTransaction>])
    /// The store completed the restore, and the account has nothing restorable for this app.
    case nothingToRestore
    /// The store could not restore (the customer cancelled signing in, a deleted account, the store down).
    case failed(StoreError)
}

/// The app's own signed transaction (StoreKit 2's `AppTransaction`, iOS 16): who bought or downloaded the app,
/// when, and which version first.
public struct StoreAppTransaction: Sendable, Hashable {
    /// The JWS, for a server to verify.
    public var signedAppTransaction: String
    /// The customer's unique id for this app (`appTransactionID`, iOS 18.4); what the server's signatures for
    /// introductory offers name when it has no purchase of the customer.
    public var appTransactionId: String?
    public var bundleId: String
    /// The version the customer first got (`originalAppVersion`): tells paid-app customers from later ones.
    public var originalAppVersion: String
    public var originalPurchaseDate: Date
    public var environment: String

    public init(
        signedAppTransaction: String,
        appTransactionId: String? = nil,
        bundleId: String,
        originalAppVersion: String,
        originalPurchaseDate: Date,
        environment: String
    ) {
        self.signedAppTransaction = signedAppTransaction
        self.appTransactionId = appTransactionId
        self.bundleId = bundleId
        self.originalAppVersion = originalAppVersion
        self.originalPurchaseDate = originalPurchaseDate
        self.environment = environment
    }
}

/// A subscription's state in its group (StoreKit 2's `Product.SubscriptionInfo.Status`).
public struct StoreSubscriptionStatus: Sendable, Hashable {
    /// StoreKit 2's `Product.SubscriptionInfo.RenewalState`.
    public enum RenewalState: String, Sendable, Hashable {
        case subscribed
        case expired
        case inBillingRetryPeriod
        case inGracePeriod
        case revoked
    }

    public var state: RenewalState
    /// The latest transaction of the subscription.
    public var transaction: StoreVerification<StoreTransaction>
    public var renewalInfo: StoreVerification<StoreRenewalInfo>

    public init(
        state: RenewalState,
        transaction: StoreVerification<StoreTransaction>,
        renewalInfo: StoreVerification<StoreRenewalInfo>
    ) {
        self.state = state
        self.transaction = transaction
        self.renewalInfo = renewalInfo
    }

    /// Whether the customer has access now (subscribed, or in the grace period).
    public var grantsAccess: Bool { state == .subscribed || state == .inGracePeriod }
}

/// What happens at a subscription's next renewal (StoreKit 2's `Product.SubscriptionInfo.RenewalInfo`).
public struct StoreRenewalInfo: Sendable, Hashable {
    public var originalTransactionId: String
    /// The product that renews (another one of the group after an upgrade or downgrade).
    public var autoRenewProductId: String
    public var willAutoRenew: Bool
    /// When the grace period ends, while in one.
    public var gracePeriodExpirationDate: Date?
    /// The JWS.
    public var signedRenewalInfo: String?

    public init(
        originalTransactionId: String,
        autoRenewProductId: String,
        willAutoRenew: Bool,
        gracePeriodExpirationDate: Date? = nil,
        signedRenewalInfo: String? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.autoRenewProductId = autoRenewProductId
        self.willAutoRenew = willAutoRenew
        self.gracePeriodExpirationDate = gracePeriodExpirationDate
        self.signedRenewalInfo = signedRenewalInfo
    }
}
