import TillCore

/// The `data` object of a notification: the app, its environment and the signed transaction
/// and renewal info the event is about.
///
/// ```
/// {"environment":"Sandbox","appAppleId":41234,"bundleId":"com.example","bundleVersion":"1.2.3",
///  "signedTransactionInfo":"<JWS>","signedRenewalInfo":"<JWS>","status":1}
/// ```
///
/// A TEST notification carries only `bundleId`, `environment` (and `appAppleId`).
public struct NotificationData: Codable, Sendable, Hashable {
    /// The app's Apple ID (absent in sandbox).
    public var appAppleId: Int64?
    public var bundleId: String?
    /// The app's CFBundleVersion.
    public var bundleVersion: String?
    public var environment: AppStoreEnvironment?
    /// A JWS whose payload is a ``JWSTransactionDecodedPayload``.
    public var signedTransactionInfo: String?
    /// A JWS whose payload is a ``JWSRenewalInfoDecodedPayload`` (subscriptions only).
    public var signedRenewalInfo: String?
    /// The subscription's status (subscriptions only).
    public var status: AppStoreSubscriptionStatus?
    /// Why the customer asked for a refund (CONSUMPTION_REQUEST only).
    public var consumptionRequestReason: ConsumptionRequestReason?

    public init(
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        bundleVersion: String? = nil,
        environment: AppStoreEnvironment? = nil,
        signedTransactionInfo: String? = nil,
        signedRenewalInfo: String? = nil,
        status: AppStoreSubscriptionStatus? = nil,
        consumptionRequestReason: ConsumptionRequestReason? = nil
    ) {
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.bundleVersion = bundleVersion
        self.environment = environment
        self.signedTransactionInfo = signedTransactionInfo
        self.signedRenewalInfo = signedRenewalInfo
        self.status = status
        self.consumptionRequestReason = consumptionRequestReason
    }
}
