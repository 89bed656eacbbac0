import Crypto
import Foundation
import TillContract

/// A Till server's snapshot signing key, published as a JSON Web Key (RFC 7517) so apps can check snapshots
/// (`GET /v1/keys`; the wire type is generated from openapi.yaml).
public typealias SnapshotPublicKey = Components.Schemas.SnapshotPublicKey

/// The keys a server publishes: the current one first; older ones stay while snapshots they signed may still be on
/// devices.
public typealias SnapshotKeySet = Components.Schemas.SnapshotKeySet

extension Components.Schemas.SnapshotPublicKey {
    /// The JWK of a P-256 key.
    public init(_ key: P256.Signing.PublicKey) {
        let raw = Array(key.rawRepresentation)  // x ‖ y, 32 bytes each
        self.init(
            kty: "EC",
            crv: "P-256",
            alg: "ES256",
            use: "sig",
            kid: Self.keyId(of: key),
            x: Base64URL.encode(raw[0..<32]),
            y: Base64URL.encode(raw[32..<64])
        )
    }

    /// The key's id: the first 16 hex digits of the SHA-256 of its X9.63 form.
    static func keyId(of key: P256.Signing.PublicKey) -> String {
        SHA256.hash(data: key.x963Representation).prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    /// The key itself; throws for anything but an ES256 P-256 key whose id matches it.
    public func publicKey() throws(SnapshotError) -> P256.Signing.PublicKey {
        guard kty == "EC", crv == "P-256", alg == "ES256" else { throw .unsupportedKey(kid) }
        guard let x = Base64URL.decode(x), let y = Base64URL.decode(y), x.count == 32, y.count == 32,
            let key = try? P256.Signing.PublicKey(rawRepresentation: x + y)
        else { throw .unsupportedKey(kid) }
        guard Self.keyId(of: key) == kid else { throw .unsupportedKey(kid) }
        return key
    }
}
