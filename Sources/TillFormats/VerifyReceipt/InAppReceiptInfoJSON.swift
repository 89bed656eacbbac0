import Foundation
import TillCore

/// An element of `receipt.in_app` and of `latest_receipt_info` in a verifyReceipt response.
///
/// ```
/// {"quantity":"1","product_id":"monthly","transaction_id":"1000000166965150",
///  "original_transaction_id":"1000000166965150",
///  "purchase_date":"2015-08-10 06:49:32 Etc/GMT","purchase_date_ms":"1439189372000",
///  "purchase_date_pst":"2015-08-09 23:49:32 America/Los_Angeles",
///  "expires_date":"2015-08-10 06:54:32 Etc/GMT", …, "is_trial_period":"false"}
/// ```
///
/// Apple writes every value as a string, numbers and booleans included, and every date as a
/// triple `x_date` / `x_date_ms` / `x_date_pst`; each date is one `Date` here (read from `_ms`
/// when present, else from `x_date`). Unknown keys are ignored.
public struct InAppReceiptInfoJSON: Codable, Sendable, Hashable {
    /// `quantity`: 1 unless the app sold several at once (at most 10).
    public var quantity: Int?
    /// `product_id`.
    public var productId: String?
    /// `transaction_id`: unique per purchase, restore and renewal.
    public var transactionId: String?
    /// `original_transaction_id`: the first purchase of the chain.
    public var originalTransactionId: String?
    /// `purchase_date…`: when the App Store charged the customer.
    public var purchaseDate: Date?
    /// `original_purchase_date…`.
    public var originalPurchaseDate: Date?
    /// `expires_date…` (subscriptions only).
    public var expiresDate: Date?
    /// `cancellation_date…` (refunded or upgraded transactions only).
    public var cancellationDate: Date?
    /// `cancellation_reason`: "1" app issue, "0" another reason.
    public var cancellationReason: RevocationReason?
    /// `is_trial_period` ("true"/"false").
    public var isTrialPeriod: Bool?
    /// `is_in_intro_offer_period` ("true"/"false").
    public var isInIntroOfferPeriod: Bool?
    /// `is_upgraded`: "true" only on a transaction the customer upgraded away from.
    public var isUpgraded: Bool?
    /// `web_order_line_item_id`: the subscription purchase-event key.
    public var webOrderLineItemId: String?
    /// `promotional_offer_id`.
    public var promotionalOfferId: String?
    /// `offer_code_ref_name`.
    public var offerCodeRefName: String?
    /// `subscription_group_identifier`.
    public var subscriptionGroupIdentifier: String?
    /// `in_app_ownership_type`: `PURCHASED` or `FAMILY_SHARED`.
    public var inAppOwnershipType: Ownership?
    /// `app_account_token`: the UUID the app attached to the payment.
    public var appAccountToken: String?

    public init(
        quantity: Int? = nil,
        productId: String? = nil,
        transactionId: String? = nil,
        originalTransactionId: String? = nil,
        purchaseDate: Date? = nil,
        originalPurchaseDate: Date? = nil,
        expiresDate: Date? = nil,
        cancellationDate: Date? = nil,
        cancellationReason: RevocationReason? = nil,
        isTrialPeriod: Bool? = nil,
        isInIntroOfferPeriod: Bool? = nil,
        isUpgraded: Bool? = nil,
        webOrderLineItemId: String? = nil,
        promotionalOfferId: String? = nil,
        offerCodeRefName: String? = nil,
        subscriptionGroupIdentifier: String? = nil,
        inAppOwnershipType: Ownership? = nil,
        appAccountToken: String? = nil
    ) {
        self.quantity = quantity
        self.productId = productId
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.cancellationDate = cancellationDate
        self.cancellationReason = cancellationReason
        self.isTrialPeriod = isTrialPeriod
        self.isInIntroOfferPeriod = isInIntroOfferPeriod
        self.isUpgraded = isUpgraded
        self.webOrderLineItemId = webOrderLineItemId
        self.promotionalOfferId = promotionalOfferId
        self.offerCodeRefName = offerCodeRefName
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.inAppOwnershipType = inAppOwnershipType
        self.appAccountToken = appAccountToken
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: ReceiptJSONKey.self)
        quantity = try c.receiptInt("quantity").map { Int($0) }
        productId = try c.receiptString("product_id")
        transactionId = try c.receiptString("transaction_id")
        originalTransactionId = try c.receiptString("original_transaction_id")
        purchaseDate = try c.receiptDate("purchase_date")
        originalPurchaseDate = try c.receiptDate("original_purchase_date")
        expiresDate = try c.receiptDate("expires_date")
        cancellationDate = try c.receiptDate("cancellation_date")
        cancellationReason = try c.receiptValue("cancellation_reason")
        isTrialPeriod = try c.receiptBool("is_trial_period")
        isInIntroOfferPeriod = try c.receiptBool("is_in_intro_offer_period")
        isUpgraded = try c.receiptBool("is_upgraded")
        webOrderLineItemId = try c.receiptString("web_order_line_item_id")
        promotionalOfferId = try c.receiptString("promotional_offer_id")
        offerCodeRefName = try c.receiptString("offer_code_ref_name")
        subscriptionGroupIdentifier = try c.receiptString("subscription_group_identifier")
        inAppOwnershipType = try c.receiptValue("in_app_ownership_type")
        appAccountToken = try c.receiptString("app_account_token")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: ReceiptJSONKey.self)
        try c.encodeReceipt(quantity, "quantity")
        try c.encodeReceipt(productId, "product_id")
        try c.encodeReceipt(transactionId, "transaction_id")
        try c.encodeReceipt(originalTransactionId, "original_transaction_id")
        try c.encodeReceiptDate(purchaseDate, "purchase_date")
        try c.encodeReceiptDate(originalPurchaseDate, "original_purchase_date")
        try c.encodeReceiptDate(expiresDate, "expires_date")
        try c.encodeReceiptDate(cancellationDate, "cancellation_date")
        try c.encodeReceipt(cancellationReason, "cancellation_reason")
        try c.encodeReceipt(isTrialPeriod, "is_trial_period", style: .word)
        try c.encodeReceipt(isInIntroOfferPeriod, "is_in_intro_offer_period", style: .word)
        try c.encodeReceipt(isUpgraded, "is_upgraded", style: .word)
        try c.encodeReceipt(webOrderLineItemId, "web_order_line_item_id")
        try c.encodeReceipt(promotionalOfferId, "promotional_offer_id")
        try c.encodeReceipt(offerCodeRefName, "offer_code_ref_name")
        try c.encodeReceipt(subscriptionGroupIdentifier, "subscription_group_identifier")
        try c.encodeReceipt(inAppOwnershipType, "in_app_ownership_type")
        try c.encodeReceipt(appAccountToken, "app_account_token")
    }
}
