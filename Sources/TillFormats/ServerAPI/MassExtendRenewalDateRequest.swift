/// The body of Extend Subscription Renewal Dates for All Active Subscribers
/// (`POST /inApps/v1/subscriptions/extend/mass`).
///
/// ```
/// {"extendByDays":45,"extendReasonCode":1,"requestIdentifier":"fdf964a4-…",
///  "storefrontCountryCodes":["USA","MEX"],"productId":"com.example.productId"}
/// ```
public struct MassExtendRenewalDateRequest: Codable, Sendable, Hashable {
    /// The number of days to extend by (Apple allows up to 90).
    public var extendByDays: Int?
    public var extendReasonCode: ExtendReasonCode?
    /// A UUID the developer picks; also the key to ask for the status with.
    public var requestIdentifier: String?
    /// The storefronts (ISO 3166-1 alpha-3) to extend in; all when absent.
    public var storefrontCountryCodes: [String]?
    /// The subscription product to extend.
    public var productId: String?

    public init(
        extendByDays: Int? = nil,
        extendReasonCode: ExtendReasonCode? = nil,
        requestIdentifier: String? = nil,
        storefrontCountryCodes: [String]? = nil,
        productId: String? = nil
    ) {
        self.extendByDays = extendByDays
        self.extendReasonCode = extendReasonCode
        self.requestIdentifier = requestIdentifier
        self.storefrontCountryCodes = storefrontCountryCodes
        self.productId = productId
    }
}
