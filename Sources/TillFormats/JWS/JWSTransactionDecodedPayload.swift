import Foundation
import TillCore

/// The payload of a signed transaction (`signedTransactionInfo`, StoreKit 2 `Transaction`).
///
/// ```
/// {"transactionId":"23456","originalTransactionId":"12345","bundleId":"com.example",
///  "productId":"com.example.product","purchaseDate":1698148900000,"quantity":1,
///  "type":"Auto-Renewable Subscription","inAppOwnershipType":"PURCHASED",
///  "signedDate":1698148900000,"environment":"Sandbox","price":10990,"currency":"USD", …}
/// ```
///
/// Every field is optional and named as Apple's key; dates are epoch milliseconds
/// (decode and encode with ``AppleJSON``). Unknown keys, including `advancedCommerceInfo`,
/// are ignored when decoding.
public struct JWSTransactionDecodedPayload: JWSPayload, Hashable {
    public static var payloadKind: JWSPayloadKind { .transaction }

    /// Unique per purchase, restore and renewal.
    public var transactionId: String?
    /// The transaction id of the original purchase.
    public var originalTransactionId: String?
    /// The subscription purchase-event key (subscriptions only).
    public var webOrderLineItemId: String?
    public var bundleId: String?
    public var productId: String?
    public var subscriptionGroupIdentifier: String?
    /// When the App Store charged the customer (for renewals: the renewal).
    public var purchaseDate: Date?
    /// When the original transaction was purchased.
    public var originalPurchaseDate: Date?
    /// When the subscription expires or renews (subscriptions only).
    public var expiresDate: Date?
    public var quantity: Int?
    /// The product type.
    public var type: TransactionType?
    /// The UUID the app attached to the purchase, as Apple spells it (lowercase).
    public var appAccountToken: String?
    /// Whether the customer bought the product or gets it through Family Sharing.
    public var inAppOwnershipType: Ownership?
    /// When the App Store signed the payload.
    public var signedDate: Date?
    public var revocationReason: RevocationReason?
    /// When the App Store refunded the transaction or revoked it from Family Sharing.
    public var revocationDate: Date?
    /// Whether the customer upgraded to another subscription of the same group.
    public var isUpgraded: Bool?
    public var offerType: OfferType?
    public var offerIdentifier: String?
    public var environment: AppStoreEnvironment?
    /// ISO 3166-1 alpha-3 country code of the storefront, e.g. `USA`.
    public var storefront: String?
    /// Apple's storefront id, e.g. `143441` (USA).
    public var storefrontId: String?
    public var transactionReason: TransactionReason?
    /// ISO 4217 currency code of `price`.
    public var currency: String?
    /// The price in milliunits of `currency` (10990 = 10.99).
    public var price: Int64?
    public var offerDiscountType: OfferDiscountType?
    /// The id of the app download transaction (the AppTransaction).
    public var appTransactionId: String?
    /// The offer duration as an ISO 8601 duration, e.g. `P1Y`.
    public var offerPeriod: String?
    public var revocationType: RevocationType?
    /// The refunded share in milliunits (50000 = 50 %).
    public var revocationPercentage: Int?
    public var billingPlanType: BillingPlanType?
    /// The commitment of a subscription billed in installments.
    public var commitmentInfo: CommitmentInfo?
    /// Base64 SHA-384 device verification value (Xcode and on-device data).
    public var deviceVerification: String?
    /// The nonce (UUID string) of `deviceVerification`.
    public var deviceVerificationNonce: String?

    /// The commitment of a subscription billed in installments (`commitmentInfo`).
    public struct CommitmentInfo: Codable, Sendable, Hashable {
        /// The number of the current billing period within the commitment.
        public var billingPeriodNumber: Int?
        /// When the commitment ends.
        public var commitmentExpiresDate: Date?
        /// The price of the whole commitment in milliunits.
        public var commitmentPrice: Int64?
        /// The number of billing periods of the commitment.
        public var totalBillingPeriods: Int?

        public init(
            billingPeriodNumber: Int? = nil,
            commitmentExpiresDate: Date? = nil,
            commitmentPrice: Int64? = nil,
            totalBillingPeriods: Int? = nil
        ) {
            self.billingPeriodNumber = billingPeriodNumber
            self.commitmentExpiresDate = commitmentExpiresDate
            self.commitmentPrice = commitmentPrice
            self.totalBillingPeriods = totalBillingPeriods
        }
    }

    public init(
        transactionId: String? = nil,
        originalTransactionId: String? = nil,
        webOrderLineItemId: String? = nil,
        bundleId: String? = nil,
        productId: String? = nil,
        subscriptionGroupIdentifier: String? = nil,
        purchaseDate: Date? = nil,
        originalPurchaseDate: Date? = nil,
        expiresDate: Date? = nil,
        quantity: Int? = nil,
        type: TransactionType? = nil,
        appAccountToken: String? = nil,
        inAppOwnershipType: Ownership? = nil,
        signedDate: Date? = nil,
        revocationReason: RevocationReason? = nil,
        revocationDate: Date? = nil,
        isUpgraded: Bool? = nil,
        offerType: OfferType? = nil,
        offerIdentifier: String? = nil,
        environment: AppStoreEnvironment? = nil,
        storefront: String? = nil,
        storefrontId: String? = nil,
        transactionReason: TransactionReason? = nil,
        currency: String? = nil,
        price: Int64? = nil,
        offerDiscountType: OfferDiscountType? = nil,
        appTransactionId: String? = nil,
        offerPeriod: String? = nil,
        revocationType: RevocationType? = nil,
        revocationPercentage: Int? = nil,
        billingPlanType: BillingPlanType? = nil,
        commitmentInfo: CommitmentInfo? = nil,
        deviceVerification: String? = nil,
        deviceVerificationNonce: String? = nil
    ) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.bundleId = bundleId
        self.productId = productId
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.quantity = quantity
        self.type = type
        self.appAccountToken = appAccountToken
        self.inAppOwnershipType = inAppOwnershipType
        self.signedDate = signedDate
        self.revocationReason = revocationReason
        self.revocationDate = revocationDate
        self.isUpgraded = isUpgraded
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.environment = environment
        self.storefront = storefront
        self.storefrontId = storefrontId
        self.transactionReason = transactionReason
        self.currency = currency
        self.price = price
        self.offerDiscountType = offerDiscountType
        self.appTransactionId = appTransactionId
        self.offerPeriod = offerPeriod
        self.revocationType = revocationType
        self.revocationPercentage = revocationPercentage
        self.billingPlanType = billingPlanType
        self.commitmentInfo = commitmentInfo
        self.deviceVerification = deviceVerification
        self.deviceVerificationNonce = deviceVerificationNonce
    }

    /// `signedDate`: the chain is checked at the moment Apple signed the transaction.
    public var verificationDate: Date? { signedDate }

    /// The transaction's `bundleId` and `environment`.
    public var identity: PayloadIdentity { PayloadIdentity(bundleId: bundleId, environment: environment) }
}
