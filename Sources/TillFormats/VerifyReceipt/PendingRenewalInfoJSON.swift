import Foundation

/// An element of `pending_renewal_info` in a verifyReceipt response: one per auto-renewable product.
///
/// ```
/// {"auto_renew_product_id":"monthly","auto_renew_status":"1","expiration_intent":"2",
///  "is_in_billing_retry_period":"1","original_transaction_id":"1000000166965150",
///  "product_id":"monthly","grace_period_expires_date_ms":"1439452246000", …}
/// ```
///
/// Every value is a string; the grace period date is the usual `_date` / `_ms` / `_pst` triple.
/// Unknown keys are ignored.
public struct PendingRenewalInfoJSON: Codable, Sendable, Hashable {
    /// `auto_renew_product_id`: the product that renews (differs after an up/down/crossgrade).
    public var autoRenewProductId: String?
    /// `auto_renew_status`: "1" will renew, "0" turned off.
    public var autoRenewStatus: AutoRenewStatus?
    /// `expiration_intent`: "1"–"5", only once the subscription expired.
    public var expirationIntent: ExpirationIntent?
    /// `grace_period_expires_date…` (billing grace period only).
    public var gracePeriodExpiresDate: Date?
    /// `is_in_billing_retry_period`: "1" the App Store is retrying, "0" it stopped.
    public var isInBillingRetryPeriod: Bool?
    /// `offer_code_ref_name`.
    public var offerCodeRefName: String?
    /// `promotional_offer_id`.
    public var promotionalOfferId: String?
    /// `original_transaction_id`.
    public var originalTransactionId: String?
    /// `product_id`: the product of the current period.
    public var productId: String?
    /// `price_consent_status`: 0 not yet consented, 1 consented (only after a price increase).
    public var priceConsentStatus: Int?
    /// `price_increase_status` (reported by third parties only).
    public var priceIncreaseStatus: PriceIncreaseStatus?

    public init(
        autoRenewProductId: String? = nil,
        autoRenewStatus: AutoRenewStatus? = nil,
        expirationIntent: ExpirationIntent? = nil,
        gracePeriodExpiresDate: Date? = nil,
        isInBillingRetryPeriod: Bool? = nil,
        offerCodeRefName: String? = nil,
        promotionalOfferId: String? = nil,
        originalTransactionId: String? = nil,
        productId: String? = nil,
        priceConsentStatus: Int? = nil,
        priceIncreaseStatus: PriceIncreaseStatus? = nil
    ) {
        self.autoRenewProductId = autoRenewProductId
        self.autoRenewStatus = autoRenewStatus
        self.expirationIntent = expirationIntent
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.offerCodeRefName = offerCodeRefName
        self.promotionalOfferId = promotionalOfferId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.priceConsentStatus = priceConsentStatus
        self.priceIncreaseStatus = priceIncreaseStatus
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: ReceiptJSONKey.self)
        autoRenewProductId = try c.receiptString("auto_renew_product_id")
        autoRenewStatus = try c.receiptValue("auto_renew_status")
        expirationIntent = try c.receiptValue("expiration_intent")
        gracePeriodExpiresDate = try c.receiptDate("grace_period_expires_date")
        isInBillingRetryPeriod = try c.receiptBool("is_in_billing_retry_period")
        offerCodeRefName = try c.receiptString("offer_code_ref_name")
        promotionalOfferId = try c.receiptString("promotional_offer_id")
        originalTransactionId = try c.receiptString("original_transaction_id")
        productId = try c.receiptString("product_id")
        priceConsentStatus = try c.receiptInt("price_consent_status").map { Int($0) }
        priceIncreaseStatus = try c.receiptValue("price_increase_status")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: ReceiptJSONKey.self)
        try c.encodeReceipt(autoRenewProductId, "auto_renew_product_id")
        try c.encodeReceipt(autoRenewStatus, "auto_renew_status")
        try c.encodeReceipt(expirationIntent, "expiration_intent")
        try c.encodeReceiptDate(gracePeriodExpiresDate, "grace_period_expires_date")
        try c.encodeReceipt(isInBillingRetryPeriod, "is_in_billing_retry_period", style: .digit)
        try c.encodeReceipt(offerCodeRefName, "offer_code_ref_name")
        try c.encodeReceipt(promotionalOfferId, "promotional_offer_id")
        try c.encodeReceipt(originalTransactionId, "original_transaction_id")
        try c.encodeReceipt(productId, "product_id")
        try c.encodeReceipt(priceConsentStatus, "price_consent_status")
        try c.encodeReceipt(priceIncreaseStatus, "price_increase_status")
    }
}
