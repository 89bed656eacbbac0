/// The body of a verifyReceipt request (`POST https://buy.itunes.apple.com/verifyReceipt`,
/// sandbox: `https://sandbox.itunes.apple.com/verifyReceipt`).
///
/// ```
/// {"receipt-data":"MIIT…","password":"0123abcd…","exclude-old-transactions":true}
/// ```
public struct VerifyReceiptRequest: Codable, Sendable, Hashable {
    /// `receipt-data`: the base64 app receipt, or an iOS 6-style transaction receipt.
    public var receiptData: String?
    /// `password`: the app-specific shared secret (needed for auto-renewable subscriptions).
    public var password: String?
    /// `exclude-old-transactions`: only the latest renewal of each subscription in `latest_receipt_info`.
    public var excludeOldTransactions: Bool?

    public init(receiptData: String? = nil, password: String? = nil, excludeOldTransactions: Bool? = nil) {
        self.receiptData = receiptData
        self.password = password
        self.excludeOldTransactions = excludeOldTransactions
    }

    enum CodingKeys: String, CodingKey {
        case receiptData = "receipt-data"
        case password
        case excludeOldTransactions = "exclude-old-transactions"
    }
}
