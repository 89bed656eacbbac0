/// One notification of a ``NotificationHistoryResponse`` with its delivery attempts.
///
/// ```
/// {"signedPayload":"<JWS>","sendAttempts":[{"attemptDate":1698148900000,"sendAttemptResult":"SUCCESS"}]}
/// ```
public struct NotificationHistoryResponseItem: Codable, Sendable, Hashable {
    /// A JWS whose payload is a ``ResponseBodyV2DecodedPayload``.
    public var signedPayload: String?
    public var sendAttempts: [SendAttemptItem]?

    public init(signedPayload: String? = nil, sendAttempts: [SendAttemptItem]? = nil) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }
}
