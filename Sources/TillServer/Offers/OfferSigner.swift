import Crypto
import Foundation
import JWTKit
import TillAppStore
import TillCatalogue
import TillLedger

/// Signs what StoreKit passes to the App Store with an offer, with the app's In-App Purchase key (an App Store
/// Connect key: P-256, its key id and issuer id).
///
/// The original promotional offer signature (StoreKit 1's `SKPaymentDiscount`, StoreKit 2's
/// `promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`):
///
/// ```
/// payload   = bundleId ⁣ keyId ⁣ productId ⁣ offerId ⁣ lowercase(appAccountToken) or "" ⁣ lowercase(nonce) ⁣ timestamp
///             (U+2063 INVISIBLE SEPARATOR between the fields; timestamp in UNIX milliseconds)
/// signature = base64(DER(ECDSA-P256-SHA256(UTF-8(payload))))
/// ```
///
/// The compact JWS of 2025 (`promotionalOffer(_:compactJWS:)`, `introductoryOfferEligibility(compactJWS:)`):
///
/// ```
/// header  = {"alg":"ES256","kid":keyId,"typ":"JWT"}
/// payload = {"iss":issuerId,"iat":seconds,"aud":"promotional-offer"|"introductory-offer-eligibility","bid":bundleId,
///            "nonce":uuid, …claims of the request}        (no "exp": the App Store refuses a request that has one)
/// jws     = base64url(header) "." base64url(payload) "." base64url(r ‖ s)
/// ```
struct OfferSigner: Sendable {
    let keyId: String
    let issuerId: String
    let key: P256.Signing.PrivateKey
    let bundleId: String

    /// The original signature over Apple's joined fields.
    func promotionalSignature(
        productId: String,
        offerIdentifier: String,
        appAccountToken: String?,
        nonce: UUID,
        timestamp: Int64
    ) throws -> String {
        let payload = [
            bundleId, keyId, productId, offerIdentifier, (appAccountToken ?? "").lowercased(),
            nonce.uuidString.lowercased(), String(timestamp),
        ].joined(separator: "\u{2063}")
        return try key.signature(for: Data(payload.utf8)).derRepresentation.base64EncodedString()
    }

    /// The claims of a signed App Store request beyond the base ones (`iss`, `iat`, `aud`, `bid`, `nonce`).
    struct RequestClaims: Encodable {
        var productId: String
        var offerIdentifier: String?
        var allowIntroductoryOffer: Bool?
        var transactionId: String?
    }

    /// A compact JWS for the App Store (`aud` names the request), issued at `issuedAt` (UNIX seconds): signed by
    /// JWTKit, as `AppleClient`'s tokens are (ES256, the key's id as `kid`, `typ` JWT).
    func signedRequest(audience: String, claims: RequestClaims, nonce: UUID, issuedAt: Int64) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(backing: key), kid: JWKIdentifier(string: keyId))
        let payload = SignedRequestPayload(
            iss: issuerId,
            iat: issuedAt,
            aud: audience,
            bid: bundleId,
            nonce: nonce.uuidString.lowercased(),
            productId: claims.productId,
            offerIdentifier: claims.offerIdentifier,
            allowIntroductoryOffer: claims.allowIntroductoryOffer,
            transactionId: claims.transactionId
        )
        return try await keys.sign(payload, kid: JWKIdentifier(string: keyId), header: ["typ": "JWT"])
    }

    /// What a signed App Store request carries: the base claims and the request's own (no `exp`).
    private struct SignedRequestPayload: JWTPayload {
        var iss: String
        var iat: Int64
        var aud: String
        var bid: String
        var nonce: String
        var productId: String
        var offerIdentifier: String?
        var allowIntroductoryOffer: Bool?
        var transactionId: String?

        /// Signed here, checked by the App Store: nothing to verify.
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }
}
