import Foundation

/// What StoreKit gives an app, as one protocol fitted to StoreKit 2: TillClient's purchase logic runs on it, and
/// each store is an implementation — ``StoreKit2Storefront`` and ``StoreKit1Storefront`` over Apple's StoreKit,
/// ``SimulatorStorefront`` over `till simulator`. docs/client.md maps each requirement to both StoreKits.
///
/// A refusal by the store (a declined card, a bad offer, purchases not allowed) is thrown as a ``StoreError``; a
/// store that cannot be reached throws ``TillClientError``.
public protocol TillStorefront: Sendable {
    /// Whether this device may pay (`false` under Screen Time restrictions).
    func canMakePayments() async throws -> Bool

    /// Looks products up: the valid ones, localized, with their subscription offers and this customer's
    /// eligibility, and the identifiers the store does not sell here.
    func products(_ identifiers: [String]) async throws -> ProductLookup

    /// Shows the payment sheet and answers once the store has decided.
    func purchase(_ payment: Payment) async throws -> StorePurchaseResult

    /// What the app has not finished yet, every time it is asked, until it is finished (StoreKit 2's
    /// `Transaction.unfinished`, StoreKit 1's queue).
    func unfinishedTransactions() async throws -> [StoreUpdate]

    /// What the store reports as it happens, for as long as the task iterating it runs (StoreKit 2's
    /// `Transaction.updates`, StoreKit 1's queue observer). Unfinished transactions come first.
    func transactionUpdates() -> AsyncStream<StoreUpdate>

    /// Tells the store the transaction is done with. Call it only once the purchase is delivered.
    func finish(_ transaction: StoreTransaction) async throws

    /// Brings back the customer's restorable purchases, on any device of the account.
    func restorePurchases() async throws -> StorefrontRestore

    /// What the customer is entitled to now, as the store sees it (StoreKit 2's
    /// `Transaction.currentEntitlements`): non-consumables, current subscriptions, non-renewing subscriptions.
    /// Empty where the store cannot say (StoreKit 1).
    func currentEntitlements() async throws -> [StoreVerification<StoreTransaction>]

    /// The app receipt (PKCS#7, base64), refreshed from the store when the device has none; nil if it still has
    /// none.
    func appReceipt() async throws -> String?

    /// The app's own signed transaction (StoreKit 2, iOS 16); nil where the store has none.
    func appTransaction() async throws -> StoreVerification<StoreAppTransaction>?

    /// The states of the subscriptions of a group (StoreKit 2's `Product.SubscriptionInfo.status(for:)`); empty where
    /// the store cannot say (StoreKit 1).
    func subscriptionStatuses(groupId: String) async throws -> [StoreSubscriptionStatus]
}

/// What the app asks to buy (StoreKit 2's `Product.purchase(options:)`, StoreKit 1's `SKPayment`).
public struct Payment: Sendable, Hashable {
    public var productId: String
    /// 1 to 10; more than 1 only for consumables.
    public var quantity: Int
    /// The app's UUID for the customer (`appAccountToken`; StoreKit 1's `applicationUsername`), carried into the
    /// signed transaction.
    public var appAccountToken: UUID?
    /// A promotional offer with the developer's signature.
    public var promotionalOffer: PromotionalOffer?
    /// The developer's signed word on the introductory offer (StoreKit 2's
    /// `.introductoryOfferEligibility(compactJWS:)`).
    public var introductoryOfferEligibility: String?
    /// A win-back offer of the product (StoreKit 2's `.winBackOffer(_:)`, iOS 18).
    public var winBackOfferId: String?

    public init(
        productId: String,
        quantity: Int = 1,
        appAccountToken: UUID? = nil,
        promotionalOffer: PromotionalOffer? = nil,
        introductoryOfferEligibility: String? = nil,
        winBackOfferId: String? = nil
    ) {
        self.productId = productId
        self.quantity = quantity
        self.appAccountToken = appAccountToken
        self.promotionalOffer = promotionalOffer
        self.introductoryOfferEligibility = introductoryOfferEligibility
        self.winBackOfferId = winBackOfferId
    }
}

/// A promotional offer as a payment carries it, signed by the developer's server: the original signature (key id,
/// nonce, timestamp, base64 signature: StoreKit 2's `.promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`,
/// StoreKit 1's `SKPaymentDiscount`) or a compact JWS (`.promotionalOffer(_:compactJWS:)`). The store refuses a
/// signature that does not verify, is stale or was used.
public struct PromotionalOffer: Sendable, Hashable {
    public enum Signature: Sendable, Hashable {
        case original(keyIdentifier: String, nonce: UUID, timestamp: Int64, signature: String)
        case compactJWS(String)
    }

    public var offerIdentifier: String
    public var signature: Signature

    /// The original signature; `timestamp` in milliseconds since 1970.
    public init(offerIdentifier: String, keyIdentifier: String, nonce: UUID, timestamp: Int64, signature: String) {
        self.offerIdentifier = offerIdentifier
        self.signature = .original(
            keyIdentifier: keyIdentifier,
            nonce: nonce,
            timestamp: timestamp,
            signature: signature
        )
    }

    /// The JWS signature.
    public init(offerIdentifier: String, compactJWS: String) {
        self.offerIdentifier = offerIdentifier
        self.signature = .compactJWS(compactJWS)
    }
}
