/// The body of Set App Account Token (`PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken`).
///
/// ```
/// {"appAccountToken":"7389a31a-fb6d-4569-a2a6-db7d85d84813"}
/// ```
///
/// The answer has no body; a token that is not a UUID is refused with `invalidAppAccountTokenUUID`.
public struct UpdateAppAccountTokenRequest: Codable, Sendable, Hashable {
    /// The UUID to attach to the purchase.
    public var appAccountToken: String?

    public init(appAccountToken: String? = nil) {
        self.appAccountToken = appAccountToken
    }
}
