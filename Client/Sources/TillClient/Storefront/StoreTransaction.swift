import Foundation
import TillCore

/// A completed transaction: StoreKit 2's `Transaction` (with its `jwsRepresentation`), StoreKit 1's purchased or
/// restored `SKPaymentTransaction`, or an entry of the simulator's queue.
///
/// What the store decided against a payment (cancelled, failed, waiting for Ask to Buy) is not a transaction: it is a
/// ``StorePurchaseResult`` or a ``StoreUpdate``.
public struct StoreTransaction: Sendable, Hashable {
    /// How the transaction came to the app.
    public enum State: String, Sendable, Hashable {
        /// A purchase: a new one, a renewal, an approved Ask to Buy, a purchase on another device or through Family
        /// Sharing.
        case purchased
        /// A past purchase brought back by restore.
        case restored
    }

    /// Who bought it (StoreKit 2's `Transaction.OwnershipType`).
    public enum Ownership: String, Sendable, Hashable {
        /// The customer.
        case purchased
        /// A member of the customer's family, shared through Family Sharing.
        case familyShared
    }

    /// Why the App Store took a purchase back (StoreKit 2's `Transaction.RevocationReason`).
    public enum RevocationReason: String, Sendable, Hashable {
        /// A problem in the app: the developer's issue.
        case developerIssue
        /// Any other reason (a refund the customer asked for, among others).
        case other
        /// Upgraded to a better subscription of its group: the new one replaces it.
        case upgraded
    }

    /// The handle ``TillStorefront/finish(_:)`` takes: the StoreKit 2 transaction's id, StoreKit 1's transaction,
    /// the simulator's queue entry.
    public var id: String
    /// The store's transaction id; for a StoreKit 1 restore, the restore's own id.
    public var transactionId: String
    /// The first purchase of a subscription or non-consumable; for a StoreKit 1 restore, the purchase it brings
    /// back.
    public var originalTransactionId: String
    public var productId: String
    /// The product's type, when the store says it.
    public var productType: ProductType?
    public var state: State
    public var purchaseDate: Date
    public var quantity: Int
    /// The app's UUID for the customer, as the payment carried it.
    public var appAccountToken: UUID?
    public var ownership: Ownership
    /// An auto-renewable subscription's end.
    public var expirationDate: Date?
    /// When the App Store took the purchase back, and why; nil while it stands.
    public var revocationDate: Date?
    public var revocationReason: RevocationReason?
    /// Whether the customer upgraded to another subscription of the group: this one no longer gives access.
    public var isUpgraded: Bool
    /// Whether the store waits for the app to finish it: a transaction from the payment queue (a purchase, a
    /// renewal, a StoreKit 1 restore), not one read back from the account's history (current entitlements).
    public var requiresFinish: Bool
    /// StoreKit 2's signed transaction (JWS); for a restored one, the original purchase's.
    public var signedTransaction: String?
    /// The iOS 6-style `transactionReceipt` (base64), where the store gives one.
    public var transactionReceipt: String?

    public init(
        id: String,
        transactionId: String,
        originalTransactionId: String? = nil,
        productId: String,
        productType: ProductType? = nil,
        state: State = .purchased,
        purchaseDate: Date,
        quantity: Int = 1,
        appAccountToken: UUID? = nil,
        ownership: Ownership = .purchased,
        expirationDate: Date? = nil,
        revocationDate: Date? = nil,
        revocationReason: RevocationReason? = nil,
        isUpgraded: Bool = false,
        requiresFinish: Bool = true,
        signedTransaction: String? = nil,
        transactionReceipt: String? = nil
    ) {
        self.id = id
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId ?? transactionId
        self.productId = productId
        self.productType = productType
        self.state = state
        self.purchaseDate = purchaseDate
        self.quantity = quantity
        self.appAccountToken = appAccountToken
        self.ownership = ownership
        self.expirationDate = expirationDate
        self.revocationDate = revocationDate
        self.revocationReason = revocationReason
        self.isUpgraded = isUpgraded
        self.requiresFinish = requiresFinish
        self.signedTransaction = signedTransaction
        self.transactionReceipt = transactionReceipt
    }

    /// Whether the App Store took it back (refunded, revoked, or replaced by an upgrade).
    public var isRevoked: Bool { revocationDate != nil || isUpgraded }

    /// The transaction as the store describes it now: a refund, an upgrade or a new expiry make the same
    /// transaction something new to record, and the coordinator handles each description once.
    var deliveryKey: String {
        let revoked = revocationDate.map { "\($0.timeIntervalSince1970)" } ?? "-"
        let expires = expirationDate.map { "\($0.timeIntervalSince1970)" } ?? "-"
        return "\(id)|\(revoked)|\(isUpgraded)|\(expires)"
    }
}
