import TillCore

/// The response of Get All Subscription Statuses (`GET /inApps/v1/subscriptions/{transactionId}`).
///
/// ```
/// {"environment":"Sandbox","bundleId":"com.example","appAppleId":5454545,
///  "data":[{"subscriptionGroupIdentifier":"sub_group_one",
///           "lastTransactions":[{"status":1,"originalTransactionId":"3749183",
///                                "signedTransactionInfo":"<JWS>","signedRenewalInfo":"<JWS>"}]}]}
/// ```
public struct StatusResponse: Codable, Sendable, Hashable {
    public var environment: AppStoreEnvironment?
    public var bundleId: String?
    public var appAppleId: Int64?
    /// One item per subscription group the customer has subscribed to.
    public var data: [SubscriptionGroupIdentifierItem]?

    public init(
        environment: AppStoreEnvironment? = nil,
        bundleId: String? = nil,
        appAppleId: Int64? = nil,
        data: [SubscriptionGroupIdentifierItem]? = nil
    ) {
        self.environment = environment
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.data = data
    }
}
