import Foundation

/// StoreKit 1 as ``StoreKit1Storefront`` uses it: `SKPaymentQueue`, `SKProductsRequest` and the receipt, each call
/// one of StoreKit's, its values already in TillClient's. ``SystemStoreKit1`` is Apple's StoreKit behind it (Apple
/// platforms); a test fakes it.
///
/// The storefront holds the logic: which waiting purchase a queue update answers, what a restore brought, which
/// failed transactions to finish. An implementation only forwards StoreKit's calls and its observer's callbacks.
public protocol StoreKit1Interface: Sendable {
    /// `SKPaymentQueue.canMakePayments()`.
    func canMakePayments() -> Bool
    /// Adds the observer (`SKPaymentQueue.default().add(_:)`) whose callbacks go to `handler`, in StoreKit's order.
    func observe(_ handler: @escaping @Sendable (StoreKit1Event) -> Void)
    /// `SKProductsRequest(productIdentifiers:)`: the products and the invalid identifiers.
    func products(for identifiers: Set<String>) async throws -> ProductLookup
    /// `SKPaymentQueue.default().add(_:)` with an `SKMutablePayment` for the product (looked up first if it was
    /// not yet); a product the store does not sell throws ``StoreError`` `productUnavailable`.
    func add(_ payment: StoreKit1Payment) async throws
    /// `SKPaymentQueue.default().transactions`.
    func transactions() async -> [StoreKit1Transaction]
    /// `SKPaymentQueue.default().finishTransaction(_:)` for the transaction with this handle.
    func finish(handle: String) async
    /// `SKPaymentQueue.default().restoreCompletedTransactions(withApplicationUsername:)`.
    func restoreCompletedTransactions(applicationUsername: String?)
    /// The file at `Bundle.main.appStoreReceiptURL`; nil when there is none.
    func appReceipt() async -> Data?
    /// `SKReceiptRefreshRequest`: asks the store for a receipt (the customer may have to sign in).
    func refreshReceipt() async throws
}

/// What the payment queue's observer hears (`SKPaymentTransactionObserver`).
public enum StoreKit1Event: Sendable, Hashable {
    /// `paymentQueue(_:updatedTransactions:)`.
    case updated([StoreKit1Transaction])
    /// `paymentQueueRestoreCompletedTransactionsFinished(_:)`.
    case restoreFinished
    /// `paymentQueue(_:restoreCompletedTransactionsFailedWithError:)`, with `SKError`'s code.
    case restoreFailed(code: Int, message: String)
}

/// An `SKPaymentTransaction`, read.
public struct StoreKit1Transaction: Sendable, Hashable {
    /// `SKPaymentTransactionState`.
    public enum State: Sendable, Hashable {
        case purchasing
        case purchased
        case failed
        case restored
        case deferred
    }

    /// Which of StoreKit's transactions it is: what ``StoreKit1Interface/finish(handle:)`` takes.
    public var handle: String
    public var state: State
    /// `transactionIdentifier`: the purchase's, or for a restore the restore's own.
    public var transactionIdentifier: String?
    /// `original?.transactionIdentifier`: for a restore, the purchase it brings back.
    public var originalTransactionIdentifier: String?
    /// `payment.productIdentifier`.
    public var productIdentifier: String
    /// `payment.quantity`.
    public var quantity: Int
    /// `payment.applicationUsername`.
    public var applicationUsername: String?
    public var transactionDate: Date?
    /// `(error as? SKError)?.code.rawValue` and the error's description, for a failed transaction.
    public var errorCode: Int?
    public var errorMessage: String?

    public init(
        handle: String,
        state: State,
        transactionIdentifier: String? = nil,
        originalTransactionIdentifier: String? = nil,
        productIdentifier: String,
        quantity: Int = 1,
        applicationUsername: String? = nil,
        transactionDate: Date? = nil,
        errorCode: Int? = nil,
        errorMessage: String? = nil
    ) {
        self.handle = handle
        self.state = state
        self.transactionIdentifier = transactionIdentifier
        self.originalTransactionIdentifier = originalTransactionIdentifier
        self.productIdentifier = productIdentifier
        self.quantity = quantity
        self.applicationUsername = applicationUsername
        self.transactionDate = transactionDate
        self.errorCode = errorCode
        self.errorMessage = errorMessage
    }
}

/// An `SKMutablePayment`.
public struct StoreKit1Payment: Sendable, Hashable {
    /// `SKPaymentDiscount(identifier:keyIdentifier:nonce:signature:timestamp:)`.
    public struct Discount: Sendable, Hashable {
        public var identifier: String
        public var keyIdentifier: String
        public var nonce: UUID
        public var signature: String
        /// Milliseconds since 1970.
        public var timestamp: Int64
    }

    public var productIdentifier: String
    public var quantity: Int
    /// The app account token's UUID string: StoreKit carries a UUID `applicationUsername` into the transaction as
    /// its `appAccountToken`.
    public var applicationUsername: String?
    public var paymentDiscount: Discount?
}
