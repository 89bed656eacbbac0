import TillCore

/// The `appData` object of a RESCIND_CONSENT notification.
///
/// ```
/// {"appAppleId":41234,"bundleId":"com.example","environment":"Sandbox",
///  "signedAppTransactionInfo":"<JWS>"}
/// ```
public struct AppData: Codable, Sendable, Hashable {
    /// The app's Apple ID (absent in sandbox).
    public var appAppleId: Int64?
    public var bundleId: String?
    public var environment: AppStoreEnvironment?
    /// A JWS whose payload is an ``AppTransaction``.
    public var signedAppTransactionInfo: String?

    public init(
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        environment: AppStoreEnvironment? = nil,
        signedAppTransactionInfo: String? = nil
    ) {
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.environment = environment
        self.signedAppTransactionInfo = signedAppTransactionInfo
    }
}
