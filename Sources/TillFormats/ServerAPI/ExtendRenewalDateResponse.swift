import Foundation

/// The response of Extend a Subscription Renewal Date.
///
/// ```
/// {"originalTransactionId":"2312412","webOrderLineItemId":"9993","success":true,"effectiveDate":1698148900000}
/// ```
public struct ExtendRenewalDateResponse: Codable, Sendable, Hashable {
    public var originalTransactionId: String?
    /// The subscription period that was extended.
    public var webOrderLineItemId: String?
    /// Whether the renewal date was extended.
    public var success: Bool?
    /// The new renewal date.
    public var effectiveDate: Date?

    public init(
        originalTransactionId: String? = nil,
        webOrderLineItemId: String? = nil,
        success: Bool? = nil,
        effectiveDate: Date? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.success = success
        self.effectiveDate = effectiveDate
    }
}
