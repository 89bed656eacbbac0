/// What StoreKit gives an app, as one protocol: TillClient's purchase logic runs on it, and each store is an
/// implementation.
///
/// ``SimulatorStorefront`` talks to `till simulator`. On Apple platforms an adapter over StoreKit 1
/// (`SKPaymentQueue`, `SKProductsRequest`) or StoreKit 2 (`Product`, `Transaction`) implements it in a few lines
/// per method; docs/client.md maps each requirement to both.
///
/// Methods throw ``TillClientError`` when the store cannot be reached; what the store decides (a declined card,
/// a cancellation, Ask to Buy) is a value, never an error.
public protocol Storefront: Sendable {
    /// The transactions the store reports as they change: unfinished ones first, then new purchases, Ask to Buy
    /// decisions, purchases made on other devices. The sequence ends when the task iterating it is cancelled.
    associatedtype TransactionUpdates: AsyncSequence<StoreTransaction, Never> & Sendable

    /// Whether this device may pay (`false` under Screen Time restrictions).
    func canMakePayments() async throws -> Bool

    /// Looks products up: the valid ones with their localized title and price, and the identifiers the store does
    /// not sell here.
    func products(_ identifiers: [String]) async throws -> ProductLookup

    /// Shows the payment sheet and answers once the store has decided: `purchased`, `failed` (with the store's
    /// error code; a cancellation is ``StoreError/Code/paymentCancelled``) or `deferred` (Ask to Buy).
    func purchase(_ payment: Payment) async throws -> StoreTransaction

    /// Every transaction the app has not finished yet, every time it is asked, until it is finished.
    func unfinishedTransactions() async throws -> [StoreTransaction]

    /// Removes a transaction from the queue. Call it only once the purchase is delivered (or for a failed one).
    func finish(_ transaction: StoreTransaction) async throws

    /// Brings back the customer's restorable purchases as `restored` transactions, on any device of the account.
    func restoreCompletedTransactions() async throws -> StorefrontRestore

    /// The app receipt (PKCS#7, base64), or nil when the device has none.
    func appReceipt() async throws -> String?

    /// A new sequence of transaction updates.
    func transactionUpdates() -> TransactionUpdates
}

/// The answer to a products request (`SKProductsResponse`; StoreKit 2's `Product.products(for:)` plus the
/// identifiers it left out).
public struct ProductLookup: Sendable, Hashable, Codable {
    public var products: [StorefrontProduct]
    public var invalidProductIds: [String]

    public init(products: [StorefrontProduct], invalidProductIds: [String]) {
        self.products = products
        self.invalidProductIds = invalidProductIds
    }
}

/// What the app asks to buy (`SKPayment`; StoreKit 2's `Product.purchase(options:)`).
public struct Payment: Sendable, Hashable, Codable {
    public var productId: String
    /// 1 to 10; more than 1 only for consumables.
    public var quantity: Int
    /// An opaque id of the app's account (`SKPayment.applicationUsername`).
    public var applicationUsername: String?
    /// The app's UUID for the customer (`appAccountToken`), carried into the signed transaction.
    public var appAccountToken: String?
    /// A promotional offer with the developer's signature (`SKPayment.paymentDiscount`; StoreKit 2's
    /// `.promotionalOffer(…)` purchase options).
    public var promotionalOffer: PromotionalOffer?
    /// The developer's signed word on the introductory offer (StoreKit 2's `.introductoryOfferEligibility(compactJWS:)`).
    public var introductoryOfferEligibility: String?
    /// A win-back offer of the product (StoreKit 2's `.winBackOffer(_:)`).
    public var winBackOfferId: String?

    public init(
        productId: String,
        quantity: Int = 1,
        applicationUsername: String? = nil,
        appAccountToken: String? = nil,
        promotionalOffer: PromotionalOffer? = nil,
        introductoryOfferEligibility: String? = nil,
        winBackOfferId: String? = nil
    ) {
        self.productId = productId
        self.quantity = quantity
        self.applicationUsername = applicationUsername
        self.appAccountToken = appAccountToken
        self.promotionalOffer = promotionalOffer
        self.introductoryOfferEligibility = introductoryOfferEligibility
        self.winBackOfferId = winBackOfferId
    }
}

/// A promotional offer as a payment carries it, signed by the developer's server: the original signature
/// (`SKPaymentDiscount`: key id, nonce, timestamp, base64 signature) or a compact JWS (iOS 26's
/// `.promotionalOffer(_:compactJWS:)`). The store refuses a signature that does not verify, is stale or was used.
public struct PromotionalOffer: Sendable, Hashable, Codable {
    public var offerIdentifier: String
    public var keyIdentifier: String?
    public var nonce: String?
    /// Milliseconds since 1970, when the signature was made.
    public var timestamp: Int64?
    public var signature: String?
    public var compactJWS: String?

    /// The original signature.
    public init(offerIdentifier: String, keyIdentifier: String, nonce: String, timestamp: Int64, signature: String) {
        self.offerIdentifier = offerIdentifier
        self.keyIdentifier = keyIdentifier
        self.nonce = nonce
        self.timestamp = timestamp
        self.signature = signature
    }

    /// The JWS signature.
    public init(offerIdentifier: String, compactJWS: String) {
        self.offerIdentifier = offerIdentifier
        self.compactJWS = compactJWS
    }
}

/// The outcome of "restore completed transactions".
public enum StorefrontRestore: Sendable, Hashable {
    /// The store brought purchases back; each must be delivered and finished like a purchase.
    case restored([StoreTransaction])
    /// The store completed the restore, and the account has nothing restorable for this app.
    case nothingToRestore
    /// The store could not restore (a deleted account, the store down).
    case failed(StoreError)
}
