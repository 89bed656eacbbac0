import Crypto
import Foundation
import JWTKit
import SQLKit
import TillCore
import TillFormats

/// A promotional offer as an app passes it to a payment: the original signature (StoreKit 1's `SKPaymentDiscount`,
/// StoreKit 2's `promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`), or the compact JWS of 2025
/// (`promotionalOffer(_:compactJWS:)`).
public struct PromotionalOfferInput: Codable, Sendable, Hashable {
    public var offerIdentifier: String
    /// The original signature's key, nonce (UUID), time (milliseconds) and base64 DER ECDSA signature.
    public var keyIdentifier: String?
    public var nonce: String?
    public var timestamp: Int64?
    public var signature: String?
    /// The JWS signature (`aud` `promotional-offer`).
    public var compactJWS: String?

    public init(
        offerIdentifier: String,
        keyIdentifier: String? = nil,
        nonce: String? = nil,
        timestamp: Int64? = nil,
        signature: String? = nil,
        compactJWS: String? = nil
    ) {
        self.offerIdentifier = offerIdentifier
        self.keyIdentifier = keyIdentifier
        self.nonce = nonce
        self.timestamp = timestamp
        self.signature = signature
        self.compactJWS = compactJWS
    }
}

/// The claims of the App Store's signed requests (promotional offers and introductory-offer eligibility). `exp`
/// is read only to refuse it: Apple sets the expiry from `iat`, and a request that carries one fails.
struct SignedRequestClaims: JWTPayload {
    var iss: IssuerClaim
    var iat: IssuedAtClaim
    var aud: AudienceClaim
    var bid: String
    var nonce: String
    var exp: ExpirationClaim?
    var productId: String?
    var offerIdentifier: String?
    var transactionId: String?
    var allowIntroductoryOffer: Bool?

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

extension Offers {
    /// How long a signature stays valid after it was made: Apple keeps an original signature's offer active for
    /// 24 hours, and enforces an undisclosed window from a JWS's `iat`; the simulator uses 24 hours for both.
    static let signatureLifetime: TimeInterval = 24 * 3600

    /// Checks an original promotional offer signature exactly as the App Store does: the app's key, the fields
    /// joined with U+2063 (bundle id, key id, product, offer, the lowercased app account token or application
    /// username, the lowercased nonce, the timestamp), ECDSA P-256 with SHA-256, fresh, and its nonce unused.
    func verifySignatureV1(
        _ input: PromotionalOfferInput,
        app: SimApp,
        productId: String,
        accountToken: String,
        on db: any SQLDatabase
    ) async throws -> StoreKitErrorCode? {
        guard let keyId = input.keyIdentifier, let nonce = input.nonce, let timestamp = input.timestamp,
            let encoded = input.signature
        else { return .missingOfferParams }
        guard let key = try await store.appStoreConnect.apiKey(id: keyId, on: db), key.appAppleId == app.appAppleId,
            let publicKey = try? P256.Signing.PublicKey(pemRepresentation: key.publicKeyPem),
            let der = Data(base64Encoded: encoded),
            let signature = try? P256.Signing.ECDSASignature(derRepresentation: der)
        else { return .invalidSignature }
        let age = Date().timeIntervalSince1970 - Double(timestamp) / 1000
        guard age <= Self.signatureLifetime, age >= -60 else { return .invalidSignature }
        let payload = [
            app.bundleId, keyId, productId, input.offerIdentifier, accountToken.lowercased(), nonce.lowercased(),
            String(timestamp),
        ].joined(separator: "\u{2063}")
        guard publicKey.isValidSignature(signature, for: Data(payload.utf8)) else { return .invalidSignature }
        guard try await store.offers.useNonce(nonce, appAppleId: app.appAppleId, at: clock.nowMilliseconds, on: db)
        else {
            return .invalidSignature
        }
        return nil
    }

    /// Checks a compact JWS the developer signed for the App Store: ES256 with the app's key named by `kid`, the
    /// key's issuer, the audience, the bundle id, no `exp`, fresh by `iat`, and a nonce not used before.
    func verifySignedRequest(
        _ jws: String,
        audience: String,
        app: SimApp,
        on db: any SQLDatabase
    ) async throws -> SignedRequestClaims? {
        let segments = jws.split(separator: ".")
        guard segments.count == 3, let headerBytes = Base64.decode(segments[0], alphabet: .url),
            let header = try? JSONDecoder().decode(JWSHeader.self, from: Data(headerBytes)),
            header.alg == "ES256", let kid = header.kid,
            let key = try await store.appStoreConnect.apiKey(id: kid, on: db), key.appAppleId == app.appAppleId,
            let publicKey = try? ES256PublicKey(pem: key.publicKeyPem)
        else { return nil }
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: publicKey, kid: JWKIdentifier(string: kid))
        guard let claims = try? await keys.verify(jws, as: SignedRequestClaims.self), claims.exp == nil,
            claims.iss.value == key.issuerId, claims.aud.value == [audience], claims.bid == app.bundleId,
            UUID(uuidString: claims.nonce) != nil
        else { return nil }
        let age = Date().timeIntervalSince(claims.iat.value)
        guard age <= Self.signatureLifetime, age >= -60 else { return nil }
        guard
            try await store.offers.useNonce(claims.nonce, appAppleId: app.appAppleId, at: clock.nowMilliseconds, on: db)
        else { return nil }
        return claims
    }
}
