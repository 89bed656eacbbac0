import Crypto
import Foundation
import TillContract
import TillCore

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
        encodedHeader = Base64URL.encode(Array(header.utf8))
    }

    public func sign(_ snapshot: EntitlementSnapshot) throws -> String {
        var writer = JSONWriter()
        snapshot.writeJSON(to: &writer)
        let input = encodedHeader + "." + Base64URL.encode(writer.bytes)
        let signature = try key.signature(for: Array(input.utf8))
        return input + "." + Base64URL.encode(signature.rawRepresentation)
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
        guard jws.utf8.count <= 4 << 20 else { throw .malformed("not a compact JWS") }
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else { throw .malformed("not a compact JWS") }
        guard let headerJSON = Base64URL.decode(parts[0]),
            let header = try? JSONDecoder().decode(SnapshotHeader.self, from: Data(headerJSON))
        else { throw .malformed("unreadable header") }
        guard header.alg == "ES256" else { throw .unsupportedKey(header.kid) }
        guard header.typ == SnapshotSigner.type else { throw .malformed("typ is not \(SnapshotSigner.type)") }
        guard let key = keys[header.kid] else { throw .unknownKey(header.kid) }
        guard let signatureBytes = Base64URL.decode(parts[2]),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            key.isValidSignature(signature, for: Array(jws.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count)))
        else { throw .badSignature }
        guard let payload = Base64URL.decode(parts[1]),
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
