import TillCore

/// The body of a verifyReceipt response (HTTP 200 whatever the outcome; the outcome is `status`).
///
/// ```
/// {"status":0,"environment":"Sandbox","receipt":{…},"latest_receipt":"MIIT…",
///  "latest_receipt_info":[{…}],"pending_renewal_info":[{…}]}
/// {"status":21100,"is-retryable":true}
/// ```
///
/// Apple answers in two shapes, and one struct holds both sets of optional fields:
/// - an app receipt (iOS 7+): `receipt` is ``ReceiptInfoJSON`` and `latest_receipt_info` an array;
/// - an iOS 6-style transaction receipt: `receipt` is the flattened purchase-info
///   (``TransactionReceiptInfoJSON``, stored in ``transactionReceipt``), `latest_receipt_info` a single
///   object (``latestTransactionReceiptInfo``), plus top-level extras (`latest_expired_receipt_info`,
///   `auto_renew_status`, `auto_renew_product_id`, `expiration_intent`, `is_in_billing_retry_period`,
///   `cancellation_reason`).
///
/// A `receipt` object with a `bid` key and no `bundle_id` key is read as a transaction receipt.
/// When both properties of one key are set, the app receipt shape is written. Encode with
/// ``AppleJSON/makeEncoder()`` so that `Etc/GMT` keeps its unescaped slash, as Apple writes it.
public struct VerifyReceiptResponse: Codable, Sendable, Hashable {
    /// `status`: 0 valid, else one of Apple's 21xxx codes.
    public var status: ReceiptStatus
    /// `environment`: `Production` or `Sandbox`.
    public var environment: AppStoreEnvironment?
    /// `receipt` of an app receipt.
    @Boxed public var receipt: ReceiptInfoJSON?
    /// `receipt` of an iOS 6-style transaction receipt.
    @Boxed public var transactionReceipt: TransactionReceiptInfoJSON?
    /// `latest_receipt`: the latest base64 receipt (auto-renewable subscriptions only).
    public var latestReceipt: String?
    /// `latest_receipt_info` of an app receipt: every transaction including renewals.
    public var latestReceiptInfo: [InAppReceiptInfoJSON]?
    /// `latest_receipt_info` of an iOS 6-style receipt: the latest renewal.
    @Boxed public var latestTransactionReceiptInfo: TransactionReceiptInfoJSON?
    /// `latest_expired_receipt_info` (iOS 6 style): the latest renewal of an expired subscription.
    @Boxed public var latestExpiredReceiptInfo: TransactionReceiptInfoJSON?
    /// `pending_renewal_info`: one element per auto-renewable product.
    public var pendingRenewalInfo: [PendingRenewalInfoJSON]?
    /// `is-retryable` (hyphenated): for statuses 21100–21199, whether trying again later can succeed.
    public var isRetryable: Bool?
    /// `auto_renew_status` (iOS 6 style, a JSON integer).
    public var autoRenewStatus: AutoRenewStatus?
    /// `auto_renew_product_id` (iOS 6 style).
    public var autoRenewProductId: String?
    /// `expiration_intent` (iOS 6 style, a string).
    public var expirationIntent: ExpirationIntent?
    /// `is_in_billing_retry_period` (iOS 6 style, "1"/"0").
    public var isInBillingRetryPeriod: Bool?
    /// `cancellation_reason` (iOS 6 style, a string).
    public var cancellationReason: RevocationReason?

    public init(
        status: ReceiptStatus,
        environment: AppStoreEnvironment? = nil,
        receipt: ReceiptInfoJSON? = nil,
        transactionReceipt: TransactionReceiptInfoJSON? = nil,
        latestReceipt: String? = nil,
        latestReceiptInfo: [InAppReceiptInfoJSON]? = nil,
        latestTransactionReceiptInfo: TransactionReceiptInfoJSON? = nil,
        latestExpiredReceiptInfo: TransactionReceiptInfoJSON? = nil,
        pendingRenewalInfo: [PendingRenewalInfoJSON]? = nil,
        isRetryable: Bool? = nil,
        autoRenewStatus: AutoRenewStatus? = nil,
        autoRenewProductId: String? = nil,
        expirationIntent: ExpirationIntent? = nil,
        isInBillingRetryPeriod: Bool? = nil,
        cancellationReason: RevocationReason? = nil
    ) {
        self.status = status
        self.environment = environment
        self.receipt = receipt
        self.transactionReceipt = transactionReceipt
        self.latestReceipt = latestReceipt
        self.latestReceiptInfo = latestReceiptInfo
        self.latestTransactionReceiptInfo = latestTransactionReceiptInfo
        self.latestExpiredReceiptInfo = latestExpiredReceiptInfo
        self.pendingRenewalInfo = pendingRenewalInfo
        self.isRetryable = isRetryable
        self.autoRenewStatus = autoRenewStatus
        self.autoRenewProductId = autoRenewProductId
        self.expirationIntent = expirationIntent
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.cancellationReason = cancellationReason
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: ReceiptJSONKey.self)
        status = try c.decode(ReceiptStatus.self, forKey: "status")
        environment = try c.receiptValue("environment")
        if c.contains("receipt"), try !c.decodeNil(forKey: "receipt") {
            let keys = try c.nestedContainer(keyedBy: ReceiptJSONKey.self, forKey: "receipt")
            if keys.contains("bid") && !keys.contains("bundle_id") {
                transactionReceipt = try c.decode(TransactionReceiptInfoJSON.self, forKey: "receipt")
            } else {
                receipt = try c.decode(ReceiptInfoJSON.self, forKey: "receipt")
            }
        }
        latestReceipt = try c.receiptString("latest_receipt")
        if c.contains("latest_receipt_info"), try !c.decodeNil(forKey: "latest_receipt_info") {
            if (try? c.nestedUnkeyedContainer(forKey: "latest_receipt_info")) != nil {
                latestReceiptInfo = try c.decode([InAppReceiptInfoJSON].self, forKey: "latest_receipt_info")
            } else {
                latestTransactionReceiptInfo = try c.decode(
                    TransactionReceiptInfoJSON.self,
                    forKey: "latest_receipt_info"
                )
            }
        }
        latestExpiredReceiptInfo = try c.decodeIfPresent(
            TransactionReceiptInfoJSON.self,
            forKey: "latest_expired_receipt_info"
        )
        pendingRenewalInfo = try c.decodeIfPresent([PendingRenewalInfoJSON].self, forKey: "pending_renewal_info")
        isRetryable = try c.receiptBool("is-retryable")
        autoRenewStatus = try c.receiptValue("auto_renew_status")
        autoRenewProductId = try c.receiptString("auto_renew_product_id")
        expirationIntent = try c.receiptValue("expiration_intent")
        isInBillingRetryPeriod = try c.receiptBool("is_in_billing_retry_period")
        cancellationReason = try c.receiptValue("cancellation_reason")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: ReceiptJSONKey.self)
        try c.encode(status, forKey: "status")
        try c.encodeReceipt(environment, "environment")
        if let receipt {
            try c.encode(receipt, forKey: "receipt")
        } else {
            try c.encodeIfPresent(transactionReceipt, forKey: "receipt")
        }
        try c.encodeReceipt(latestReceipt, "latest_receipt")
        if let latestReceiptInfo {
            try c.encode(latestReceiptInfo, forKey: "latest_receipt_info")
        } else {
            try c.encodeIfPresent(latestTransactionReceiptInfo, forKey: "latest_receipt_info")
        }
        try c.encodeIfPresent(latestExpiredReceiptInfo, forKey: "latest_expired_receipt_info")
        try c.encodeIfPresent(pendingRenewalInfo, forKey: "pending_renewal_info")
        try c.encodeIfPresent(isRetryable, forKey: "is-retryable")
        try c.encodeIfPresent(autoRenewStatus?.rawValue, forKey: "auto_renew_status")
        try c.encodeReceipt(autoRenewProductId, "auto_renew_product_id")
        try c.encodeReceipt(expirationIntent, "expiration_intent")
        try c.encodeReceipt(isInBillingRetryPeriod, "is_in_billing_retry_period", style: .digit)
        try c.encodeReceipt(cancellationReason, "cancellation_reason")
    }
}
