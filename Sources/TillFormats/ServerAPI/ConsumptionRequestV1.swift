/// The body of Send Consumption Information v1 (`PUT /inApps/v1/transactions/consumption/{transactionId}`).
///
/// ```
/// {"customerConsented":true,"consumptionStatus":1,"platform":2,"sampleContentProvided":false,
///  "deliveryStatus":3,"appAccountToken":"7389a31a-…","accountTenure":4,"playTime":5,
///  "lifetimeDollarsRefunded":6,"lifetimeDollarsPurchased":7,"userStatus":4,"refundPreference":3}
/// ```
///
/// The answer has no body. The bucketed values (`accountTenure`, `playTime`,
/// `lifetimeDollars…`) are 0 (undeclared) to 7.
public struct ConsumptionRequestV1: Codable, Sendable, Hashable {
    /// Whether the customer consented to sharing the data; Apple refuses the request otherwise.
    public var customerConsented: Bool?
    public var consumptionStatus: ConsumptionStatus?
    public var platform: ConsumptionPlatform?
    /// Whether the app provides a free sample or trial of the content.
    public var sampleContentProvided: Bool?
    public var deliveryStatus: DeliveryStatusV1?
    /// The app account token (UUID string), or `""` when there is none.
    public var appAccountToken: String?
    /// The age of the customer's account, 0 (undeclared) to 7.
    public var accountTenure: Int?
    /// The time the customer spent in the app, 0 (undeclared) to 7.
    public var playTime: Int?
    /// The customer's lifetime refunds across platforms, 0 (undeclared) to 7.
    public var lifetimeDollarsRefunded: Int?
    /// The customer's lifetime purchases across platforms, 0 (undeclared) to 7.
    public var lifetimeDollarsPurchased: Int?
    public var userStatus: UserStatus?
    public var refundPreference: RefundPreferenceV1?

    public init(
        customerConsented: Bool? = nil,
        consumptionStatus: ConsumptionStatus? = nil,
        platform: ConsumptionPlatform? = nil,
        sampleContentProvided: Bool? = nil,
        deliveryStatus: DeliveryStatusV1? = nil,
        appAccountToken: String? = nil,
        accountTenure: Int? = nil,
        playTime: Int? = nil,
        lifetimeDollarsRefunded: Int? = nil,
        lifetimeDollarsPurchased: Int? = nil,
        userStatus: UserStatus? = nil,
        refundPreference: RefundPreferenceV1? = nil
    ) {
        self.customerConsented = customerConsented
        self.consumptionStatus = consumptionStatus
        self.platform = platform
        self.sampleContentProvided = sampleContentProvided
        self.deliveryStatus = deliveryStatus
        self.appAccountToken = appAccountToken
        self.accountTenure = accountTenure
        self.playTime = playTime
        self.lifetimeDollarsRefunded = lifetimeDollarsRefunded
        self.lifetimeDollarsPurchased = lifetimeDollarsPurchased
        self.userStatus = userStatus
        self.refundPreference = refundPreference
    }
}
