import Foundation
import TillCore

/// The `receipt` object of a verifyReceipt response for an iOS 6-style transaction receipt, and the
/// single-object `latest_receipt_info` / `latest_expired_receipt_info` of such a response: the
/// receipt's purchase-info with underscores instead of hyphens.
///
/// ```
/// {"bid":"com.mbaasy.ios.demo","bvrs":"1","item_id":"1017934151","product_id":"yearly",
///  "transaction_id":"1000000181298734","original_transaction_id":"1000000180636226","quantity":"1",
///  "purchase_date":"2015-11-24 06:34:41 Etc/GMT","purchase_date_ms":"1448346881000", …,
///  "expires_date":"1448346881000","expires_date_formatted":"2015-11-24 06:34:41 Etc/GMT",
///  "expires_date_formatted_pst":"2015-11-23 22:34:41 America/Los_Angeles", …}
/// ```
///
/// Every value is a string. Unlike the app receipt's entries, `expires_date` holds the
/// milliseconds and the spelled-out dates are `expires_date_formatted` / `_formatted_pst`.
/// Unknown keys are ignored.
public struct TransactionReceiptInfoJSON: Codable, Sendable, Hashable {
    /// `bid`: the bundle id.
    public var bid: String?
    /// `bvrs`: the bundle version.
    public var bvrs: String?
    /// `item_id`: the product's Apple ID.
    public var itemId: String?
    /// `app_item_id`: the app's Apple ID.
    public var appItemId: String?
    /// `product_id`.
    public var productId: String?
    /// `transaction_id`.
    public var transactionId: String?
    /// `original_transaction_id`.
    public var originalTransactionId: String?
    /// `purchase_date…`.
    public var purchaseDate: Date?
    /// `original_purchase_date…`.
    public var originalPurchaseDate: Date?
    /// `quantity`.
    public var quantity: Int?
    /// `unique_identifier`: the device identifier.
    public var uniqueIdentifier: String?
    /// `unique_vendor_identifier`: the app vendor's device identifier.
    public var uniqueVendorIdentifier: String?
    /// `version_external_identifier`.
    public var versionExternalIdentifier: String?
    /// `web_order_line_item_id` (subscriptions only).
    public var webOrderLineItemId: String?
    /// `expires_date` (milliseconds) with `expires_date_formatted` / `expires_date_formatted_pst`
    /// (subscriptions only).
    public var expiresDate: Date?
    /// `is_trial_period` ("true"/"false").
    public var isTrialPeriod: Bool?
    /// `is_in_intro_offer_period` ("true"/"false").
    public var isInIntroOfferPeriod: Bool?
    /// `in_app_ownership_type`.
    public var inAppOwnershipType: Ownership?

    public init(
        bid: String? = nil,
        bvrs: String? = nil,
        itemId: String? = nil,
        appItemId: String? = nil,
        productId: String? = nil,
        transactionId: String? = nil,
        originalTransactionId: String? = nil,
        purchaseDate: Date? = nil,
        originalPurchaseDate: Date? = nil,
        quantity: Int? = nil,
        uniqueIdentifier: String? = nil,
        uniqueVendorIdentifier: String? = nil,
        versionExternalIdentifier: String? = nil,
        webOrderLineItemId: String? = nil,
        expiresDate: Date? = nil,
        isTrialPeriod: Bool? = nil,
        isInIntroOfferPeriod: Bool? = nil,
        inAppOwnershipType: Ownership? = nil
    ) {
        self.bid = bid
        self.bvrs = bvrs
        self.itemId = itemId
        self.appItemId = appItemId
        self.productId = productId
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.quantity = quantity
        self.uniqueIdentifier = uniqueIdentifier
        self.uniqueVendorIdentifier = uniqueVendorIdentifier
        self.versionExternalIdentifier = versionExternalIdentifier
        self.webOrderLineItemId = webOrderLineItemId
        self.expiresDate = expiresDate
        self.isTrialPeriod = isTrialPeriod
        self.isInIntroOfferPeriod = isInIntroOfferPeriod
        self.inAppOwnershipType = inAppOwnershipType
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: ReceiptJSONKey.self)
        bid = try c.receiptString("bid")
        bvrs = try c.receiptString("bvrs")
        itemId = try c.receiptString("item_id")
        appItemId = try c.receiptString("app_item_id")
        productId = try c.receiptString("product_id")
        transactionId = try c.receiptString("transaction_id")
        originalTransactionId = try c.receiptString("original_transaction_id")
        purchaseDate = try c.receiptDate("purchase_date")
        originalPurchaseDate = try c.receiptDate("original_purchase_date")
        quantity = try c.receiptInt("quantity").map { Int($0) }
        uniqueIdentifier = try c.receiptString("unique_identifier")
        uniqueVendorIdentifier = try c.receiptString("unique_vendor_identifier")
        versionExternalIdentifier = try c.receiptString("version_external_identifier")
        webOrderLineItemId = try c.receiptString("web_order_line_item_id")
        expiresDate = try c.receiptDate(ms: "expires_date", gmt: "expires_date_formatted")
        isTrialPeriod = try c.receiptBool("is_trial_period")
        isInIntroOfferPeriod = try c.receiptBool("is_in_intro_offer_period")
        inAppOwnershipType = try c.receiptValue("in_app_ownership_type")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: ReceiptJSONKey.self)
        try c.encodeReceipt(bid, "bid")
        try c.encodeReceipt(bvrs, "bvrs")
        try c.encodeReceipt(itemId, "item_id")
        try c.encodeReceipt(appItemId, "app_item_id")
        try c.encodeReceipt(productId, "product_id")
        try c.encodeReceipt(transactionId, "transaction_id")
        try c.encodeReceipt(originalTransactionId, "original_transaction_id")
        try c.encodeReceiptDate(purchaseDate, "purchase_date")
        try c.encodeReceiptDate(originalPurchaseDate, "original_purchase_date")
        try c.encodeReceipt(quantity, "quantity")
        try c.encodeReceipt(uniqueIdentifier, "unique_identifier")
        try c.encodeReceipt(uniqueVendorIdentifier, "unique_vendor_identifier")
        try c.encodeReceipt(versionExternalIdentifier, "version_external_identifier")
        try c.encodeReceipt(webOrderLineItemId, "web_order_line_item_id")
        try c.encodeReceiptDate(
            expiresDate,
            ms: "expires_date",
            gmt: "expires_date_formatted",
            pst: "expires_date_formatted_pst"
        )
        try c.encodeReceipt(isTrialPeriod, "is_trial_period", style: .word)
        try c.encodeReceipt(isInIntroOfferPeriod, "is_in_intro_offer_period", style: .word)
        try c.encodeReceipt(inAppOwnershipType, "in_app_ownership_type")
    }
}
