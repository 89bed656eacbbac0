/// The HTTP body the App Store POSTs to a server notification URL (App Store Server Notifications V2).
///
/// ```
/// {"signedPayload":"<JWS of a ResponseBodyV2DecodedPayload>"}
/// ```
public struct ResponseBodyV2: Codable, Sendable, Hashable {
    /// A JWS whose payload is a ``ResponseBodyV2DecodedPayload``.
    public var signedPayload: String?

    public init(signedPayload: String? = nil) {
        self.signedPayload = signedPayload
    }
}
