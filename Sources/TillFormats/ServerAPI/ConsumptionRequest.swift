/// The body of Send Consumption Information v2 (`PUT /inApps/v2/transactions/consumption/{transactionId}`).
///
/// ```
/// {"customerConsented":true,"sampleContentProvided":false,"deliveryStatus":"DELIVERED",
///  "consumptionPercentage":50000,"refundPreference":"GRANT_PRORATED"}
/// ```
///
/// `customerConsented`, `sampleContentProvided` and `deliveryStatus` are required by Apple;
/// the answer has no body.
public struct ConsumptionRequest: Codable, Sendable, Hashable {
    /// Whether the customer consented to sharing the data; Apple refuses the request otherwise.
    public var customerConsented: Bool?
    /// Whether the app provides a free sample or trial of the content.
    public var sampleContentProvided: Bool?
    public var deliveryStatus: DeliveryStatus?
    /// How much of the purchase the customer used, in milliunits (50000 = 50 %).
    public var consumptionPercentage: Int?
    public var refundPreference: RefundPreference?

    public init(
        customerConsented: Bool? = nil,
        sampleContentProvided: Bool? = nil,
        deliveryStatus: DeliveryStatus? = nil,
        consumptionPercentage: Int? = nil,
        refundPreference: RefundPreference? = nil
    ) {
        self.customerConsented = customerConsented
        self.sampleContentProvided = sampleContentProvided
        self.deliveryStatus = deliveryStatus
        self.consumptionPercentage = consumptionPercentage
        self.refundPreference = refundPreference
    }
}
