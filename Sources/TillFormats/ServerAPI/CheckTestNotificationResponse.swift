/// The response of Get Test Notification Status (`GET /inApps/v1/notifications/test/{testNotificationToken}`).
///
/// ```
/// {"signedPayload":"<JWS>","sendAttempts":[{"attemptDate":1698148900000,"sendAttemptResult":"NO_RESPONSE"}]}
/// ```
public struct CheckTestNotificationResponse: Codable, Sendable, Hashable {
    /// A JWS whose payload is the TEST ``ResponseBodyV2DecodedPayload``.
    public var signedPayload: String?
    /// The delivery attempts, oldest first (at most 6).
    public var sendAttempts: [SendAttemptItem]?

    public init(signedPayload: String? = nil, sendAttempts: [SendAttemptItem]? = nil) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }
}
