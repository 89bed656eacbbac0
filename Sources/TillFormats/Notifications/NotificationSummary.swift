import TillCore

/// The `summary` object of a RENEWAL_EXTENSION / SUMMARY notification: the outcome of a renewal
/// date extension for all active subscribers.
///
/// ```
/// {"environment":"Sandbox","appAppleId":41234,"bundleId":"com.example","productId":"com.example.product",
///  "requestIdentifier":"efb27071-…","storefrontCountryCodes":["CAN","USA","MEX"],
///  "succeededCount":5,"failedCount":2}
/// ```
public struct NotificationSummary: Codable, Sendable, Hashable {
    public var environment: AppStoreEnvironment?
    /// The app's Apple ID (absent in sandbox).
    public var appAppleId: Int64?
    public var bundleId: String?
    /// The subscription product that was extended.
    public var productId: String?
    /// The id the developer gave the mass extension request.
    public var requestIdentifier: String?
    /// The storefronts (ISO 3166-1 alpha-3) the extension applied to.
    public var storefrontCountryCodes: [String]?
    /// How many subscriptions were extended.
    public var succeededCount: Int64?
    /// How many subscriptions could not be extended.
    public var failedCount: Int64?

    public init(
        environment: AppStoreEnvironment? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        productId: String? = nil,
        requestIdentifier: String? = nil,
        storefrontCountryCodes: [String]? = nil,
        succeededCount: Int64? = nil,
        failedCount: Int64? = nil
    ) {
        self.environment = environment
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.productId = productId
        self.requestIdentifier = requestIdentifier
        self.storefrontCountryCodes = storefrontCountryCodes
        self.succeededCount = succeededCount
        self.failedCount = failedCount
    }
}
