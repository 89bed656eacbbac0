import Crypto
import Foundation
import TillCore

/// A Till server's snapshot signing key, published as a JSON Web Key (RFC 7517) so apps can check snapshots.
public struct SnapshotPublicKey: Codable, Sendable, Hashable {
    public var kty: String
    public var crv: String
    public var alg: String
    public var use: String
    /// The key's id: the first 16 hex digits of the SHA-256 of its X9.63 form.
    public var kid: String
    /// The curve point, base64url without padding.
    public var x: String
    public var y: String

    public init(_ key: P256.Signing.PublicKey) {
        let raw = Array(key.rawRepresentation)  // x ‖ y, 32 bytes each
        kty = "EC"
        crv = "P-256"
        alg = "ES256"
        use = "sig"
        kid = Self.keyId(of: key)
        x = Base64.encode(raw[0..<32], alphabet: .url)
        y = Base64.encode(raw[32..<64], alphabet: .url)
    }

    static func keyId(of key: P256.Signing.PublicKey) -> String {
        SHA256.hash(data: key.x963Representation).prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    /// The key itself; throws for anything but an ES256 P-256 key whose id matches it.
    public func publicKey() throws(SnapshotError) -> P256.Signing.PublicKey {
        guard kty == "EC", crv == "P-256", alg == "ES256" else { throw .unsupportedKey(kid) }
        guard let x = Base64.decode(x, alphabet: .url), let y = Base64.decode(y, alphabet: .url), x.count == 32,
            y.count == 32, let key = try? P256.Signing.PublicKey(rawRepresentation: x + y)
        else { throw .unsupportedKey(kid) }
        guard Self.keyId(of: key) == kid else { throw .unsupportedKey(kid) }
        return key
    }
}

/// The keys a server publishes (`GET /v1/keys`): the current one first; older ones stay while snapshots they
/// signed may still be on devices.
public struct SnapshotKeySet: Codable, Sendable, Hashable {
    public var keys: [SnapshotPublicKey]
    public init(keys: [SnapshotPublicKey]) { self.keys = keys }
}

/// Why a snapshot was not trusted.
public enum SnapshotError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not a compact JWS, or its header or payload is not what a snapshot has.
    case malformed(String)
    /// Signed with another algorithm than ES256, or a key that is not a P-256 key.
    case unsupportedKey(String)
    /// Signed with a key this app does not know.
    case unknownKey(String)
    /// The signature does not match: the snapshot was edited, or signed by someone else.
    case badSignature
    /// A genuine snapshot, for another app or customer than the one asking.
    case wrongSubject(String)

    public var description: String {
        switch self {
        case .malformed(let why): "malformed snapshot: \(why)"
        case .unsupportedKey(let kid): "unsupported snapshot key \(kid)"
        case .unknownKey(let kid): "snapshot signed by an unknown key \(kid)"
        case .badSignature: "the snapshot's signature does not match its contents"
        case .wrongSubject(let why): "the snapshot is not for this app and customer: \(why)"
        }
    }
}

private struct SnapshotHeader: Codable {
    var alg: String
    var kid: String
    var typ: String?
}

/// Signs entitlement snapshots as compact JWS: `{"alg":"ES256","kid":…,"typ":"till-snapshot"}`.
public struct SnapshotSigner: Sendable {
    public static let type = "till-snapshot"
    private let key: P256.Signing.PrivateKey
    private let encodedHeader: String
    public let publicKey: SnapshotPublicKey

    public init(key: P256.Signing.PrivateKey) {
        self.key = key
        publicKey = SnapshotPublicKey(key.publicKey)
        let header = #"{"alg":"ES256","kid":"\#(publicKey.kid)","typ":"\#(Self.type)"}"#
        encodedHeader = Base64.encode(Array(header.utf8), alphabet: .url)
    }

    public func sign(_ snapshot: EntitlementSnapshot) throws -> String {
        var writer = JSONWriter()
        snapshot.writeJSON(to: &writer)
        let input = encodedHeader + "." + Base64.encode(writer.bytes, alphabet: .url)
        let signature = try key.signature(for: Array(input.utf8))
        return input + "." + Base64.encode(signature.rawRepresentation, alphabet: .url)
    }
}

/// Checks a snapshot's signature against the keys an app knows, and that it is about the app and customer
/// asking. Nothing in an unverified snapshot is used.
public struct SnapshotVerifier: Sendable {
    private let keys: [String: P256.Signing.PublicKey]

    /// Keys that are not usable ES256 P-256 keys are left out.
    public init(keys: [SnapshotPublicKey]) {
        var usable: [String: P256.Signing.PublicKey] = [:]
        for key in keys { if let value = try? key.publicKey() { usable[key.kid] = value } }
        self.keys = usable
    }

    public var keyIds: [String] { keys.keys.sorted() }

    public func verify(_ jws: String) throws(SnapshotError) -> EntitlementSnapshot {
        let bytes = Array(jws.utf8)
        guard bytes.count <= 4 << 20, let parts = CompactJWS(bytes) else { throw .malformed("not a compact JWS") }
        guard let headerJSON = Base64.decode(parts.headerSegment, alphabet: .url),
            let header = try? JSONDecoder().decode(SnapshotHeader.self, from: Data(headerJSON))
        else { throw .malformed("unreadable header") }
        guard header.alg == "ES256" else { throw .unsupportedKey(header.kid) }
        guard header.typ == SnapshotSigner.type else { throw .malformed("typ is not \(SnapshotSigner.type)") }
        guard let key = keys[header.kid] else { throw .unknownKey(header.kid) }
        guard let signatureBytes = Base64.decode(parts.signatureSegment, alphabet: .url),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            key.isValidSignature(signature, for: Array(bytes[..<parts.payloadSegment.endIndex]))
        else { throw .badSignature }
        guard let payload = Base64.decode(parts.payloadSegment, alphabet: .url),
            let snapshot = try? JSONDecoder().decode(EntitlementSnapshot.self, from: Data(payload))
        else { throw .malformed("unreadable payload") }
        return snapshot
    }

    /// Verifies `jws` and checks it is about `customerId` of `bundleId`.
    public func verify(_ jws: String, bundleId: String, customerId: String) throws(SnapshotError)
        -> EntitlementSnapshot
    {
        let snapshot = try verify(jws)
        guard snapshot.bundleId == bundleId else { throw .wrongSubject("bundle id \(snapshot.bundleId)") }
        guard snapshot.customerId == customerId else { throw .wrongSubject("customer \(snapshot.customerId)") }
        return snapshot
    }
}
