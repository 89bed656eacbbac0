import Foundation

/// The `receipt` object of a verifyReceipt response for an app receipt (iOS 7 and later).
///
/// ```
/// {"receipt_type":"ProductionSandbox","adam_id":0,"app_item_id":0,"bundle_id":"com.mbaasy.ios.demo",
///  "application_version":"1","download_id":0,"version_external_identifier":0,
///  "receipt_creation_date":"2015-08-13 07:50:46 Etc/GMT","receipt_creation_date_ms":"1439452246000",
///  "receipt_creation_date_pst":"2015-08-13 00:50:46 America/Los_Angeles", …,
///  "original_application_version":"1.0","in_app":[…]}
/// ```
///
/// `adam_id`, `app_item_id`, `download_id` and `version_external_identifier` are JSON integers;
/// dates are `_date` / `_ms` / `_pst` triples. Unknown keys are ignored. An iOS 6-style
/// transaction receipt decodes to ``TransactionReceiptInfoJSON`` instead.
public struct ReceiptInfoJSON: Codable, Sendable, Hashable {
    /// `receipt_type`.
    public var receiptType: LegacyReceiptType?
    /// `adam_id`: the app's Apple ID (0 in the sandbox).
    public var adamId: Int64?
    /// `app_item_id`: the app's Apple ID (0 in the sandbox).
    public var appItemId: Int64?
    /// `bundle_id`.
    public var bundleId: String?
    /// `application_version`: CFBundleVersion (iOS) or CFBundleShortVersionString (macOS).
    public var applicationVersion: String?
    /// `download_id`.
    public var downloadId: Int64?
    /// `version_external_identifier`: the App Store's id of the app version (0 in the sandbox).
    public var versionExternalIdentifier: Int64?
    /// `receipt_creation_date…`.
    public var receiptCreationDate: Date?
    /// `request_date…`: when verifyReceipt answered.
    public var requestDate: Date?
    /// `original_purchase_date…`: when the customer first bought the app.
    public var originalPurchaseDate: Date?
    /// `original_application_version`.
    public var originalApplicationVersion: String?
    /// `preorder_date…` (pre-orders only).
    public var preorderDate: Date?
    /// `expiration_date…` (Volume Purchase Program only).
    public var expirationDate: Date?
    /// `in_app`: the in-app purchases in the receipt.
    public var inApp: [InAppReceiptInfoJSON]?

    public init(
        receiptType: LegacyReceiptType? = nil,
        adamId: Int64? = nil,
        appItemId: Int64? = nil,
        bundleId: String? = nil,
        applicationVersion: String? = nil,
        downloadId: Int64? = nil,
        versionExternalIdentifier: Int64? = nil,
        receiptCreationDate: Date? = nil,
        requestDate: Date? = nil,
        originalPurchaseDate: Date? = nil,
        originalApplicationVersion: String? = nil,
        preorderDate: Date? = nil,
        expirationDate: Date? = nil,
        inApp: [InAppReceiptInfoJSON]? = nil
    ) {
        self.receiptType = receiptType
        self.adamId = adamId
        self.appItemId = appItemId
        self.bundleId = bundleId
        self.applicationVersion = applicationVersion
        self.downloadId = downloadId
        self.versionExternalIdentifier = versionExternalIdentifier
        self.receiptCreationDate = receiptCreationDate
        self.requestDate = requestDate
        self.originalPurchaseDate = originalPurchaseDate
        self.originalApplicationVersion = originalApplicationVersion
        self.preorderDate = preorderDate
        self.expirationDate = expirationDate
        self.inApp = inApp
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: ReceiptJSONKey.self)
        receiptType = try c.receiptValue("receipt_type")
        adamId = try c.receiptInt("adam_id")
        appItemId = try c.receiptInt("app_item_id")
        bundleId = try c.receiptString("bundle_id")
        applicationVersion = try c.receiptString("application_version")
        downloadId = try c.receiptInt("download_id")
        versionExternalIdentifier = try c.receiptInt("version_external_identifier")
        receiptCreationDate = try c.receiptDate("receipt_creation_date")
        requestDate = try c.receiptDate("request_date")
        originalPurchaseDate = try c.receiptDate("original_purchase_date")
        originalApplicationVersion = try c.receiptString("original_application_version")
        preorderDate = try c.receiptDate("preorder_date")
        expirationDate = try c.receiptDate("expiration_date")
        inApp = try c.decodeIfPresent([InAppReceiptInfoJSON].self, forKey: "in_app")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: ReceiptJSONKey.self)
        try c.encodeReceipt(receiptType, "receipt_type")
        try c.encodeReceiptAsNumber(adamId, "adam_id")
        try c.encodeReceiptAsNumber(appItemId, "app_item_id")
        try c.encodeReceipt(bundleId, "bundle_id")
        try c.encodeReceipt(applicationVersion, "application_version")
        try c.encodeReceiptAsNumber(downloadId, "download_id")
        try c.encodeReceiptAsNumber(versionExternalIdentifier, "version_external_identifier")
        try c.encodeReceiptDate(receiptCreationDate, "receipt_creation_date")
        try c.encodeReceiptDate(requestDate, "request_date")
        try c.encodeReceiptDate(originalPurchaseDate, "original_purchase_date")
        try c.encodeReceipt(originalApplicationVersion, "original_application_version")
        try c.encodeReceiptDate(preorderDate, "preorder_date")
        try c.encodeReceiptDate(expirationDate, "expiration_date")
        try c.encodeIfPresent(inApp, forKey: "in_app")
    }
}
