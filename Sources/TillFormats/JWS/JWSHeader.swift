/// The protected header of an App Store JWS.
///
/// ```
/// { "alg": "ES256", "x5c": [ leaf, intermediate, root ] }      -- production
/// { "alg": "ES256", "typ": "JWT", "kid": "Apple_Xcode_Key", "x5c": [ self-signed ] }   -- Xcode
/// ```
/// `x5c` entries are standard base64 (not base64url) DER certificates.
public struct JWSHeader: Codable, Sendable, Hashable {
    public var alg: String?
    public var x5c: [String]?
    public var kid: String?
    public var typ: String?

    public init(alg: String? = "ES256", x5c: [String]? = nil, kid: String? = nil, typ: String? = nil) {
        self.alg = alg
        self.x5c = x5c
        self.kid = kid
        self.typ = typ
    }
}
