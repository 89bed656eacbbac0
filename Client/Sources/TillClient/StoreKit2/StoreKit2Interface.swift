import Foundation

/// StoreKit 2 as ``StoreKit2Storefront`` uses it: one call for each of StoreKit's, with its answers already in
/// TillClient's values. ``SystemStoreKit2`` is Apple's StoreKit behind it (Apple platforms); a test fakes it.
///
/// Everything with a decision in it (which purchase options a payment makes, what an outcome becomes, which
/// transaction a `finish` is for, what a restore found) is in the storefront, generic over this protocol, so
/// that Linux tests drive it through every StoreKit outcome. An implementation only calls StoreKit and maps its
/// values: a refusal is thrown as a ``StoreError``, unverified data comes ``StoreVerification/unverified(_:_:)``.
public protocol StoreKit2Interface: Sendable {
    /// StoreKit's `Transaction`, kept until it is finished.
    associatedtype Transaction: Sendable

    /// `AppStore.canMakePayments`.
    func canMakePayments() async -> Bool
    /// `Product.products(for:)`, each product's introductory-offer eligibility awaited
    /// (`subscription.isEligibleForIntroOffer`).
    func products(for identifiers: [String]) async throws -> [StoreProduct]
    /// `product.purchase(options:)`.
    func purchase(productId: String, options: [StoreKit2PurchaseOption]) async throws
        -> StoreKit2PurchaseResult<Transaction>
    /// `Transaction.updates`, for as long as the stream is iterated.
    func updates() -> AsyncStream<StoreKit2Signed<Transaction>>
    /// `Transaction.unfinished`.
    func unfinished() async -> [StoreKit2Signed<Transaction>]
    /// `Transaction.currentEntitlements`.
    func currentEntitlements() async -> [StoreKit2Signed<Transaction>]
    /// `transaction.finish()`.
    func finish(_ transaction: Transaction) async
    /// `AppStore.sync()`.
    func sync() async throws
    /// `AppTransaction.shared`; nil before iOS 16.
    func appTransaction() async throws -> StoreVerification<StoreAppTransaction>?
    /// `Product.SubscriptionInfo.status(for:)`.
    func subscriptionStatuses(groupId: String) async throws -> [StoreSubscriptionStatus]
    /// The app receipt file (`Bundle.main.appStoreReceiptURL`); nil when there is none.
    func appReceipt() async throws -> Data?
}

/// A transaction as StoreKit 2 signed it: StoreKit's own (to finish it) and TillClient's value.
public struct StoreKit2Signed<Transaction: Sendable>: Sendable {
    public var transaction: Transaction
    public var value: StoreVerification<StoreTransaction>

    public init(transaction: Transaction, value: StoreVerification<StoreTransaction>) {
        self.transaction = transaction
        self.value = value
    }
}

/// `Product.PurchaseResult`.
public enum StoreKit2PurchaseResult<Transaction: Sendable>: Sendable {
    case success(StoreKit2Signed<Transaction>)
    case userCancelled
    case pending
}

/// `Product.PurchaseOption`: what a payment asks of StoreKit 2.
public enum StoreKit2PurchaseOption: Sendable, Hashable {
    /// `.quantity(_:)`.
    case quantity(Int)
    /// `.appAccountToken(_:)`.
    case appAccountToken(UUID)
    /// `.promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`, the original signature.
    case promotionalOffer(offerID: String, keyID: String, nonce: UUID, signature: Data, timestamp: Int)
    /// `.promotionalOffer(_:compactJWS:)`.
    case promotionalOfferJWS(offerID: String, compactJWS: String)
    /// `.introductoryOfferEligibility(compactJWS:)`.
    case introductoryOfferEligibility(compactJWS: String)
    /// `.winBackOffer(_:)` with the product's win-back offer of this id (iOS 18).
    case winBackOffer(offerID: String)
}
