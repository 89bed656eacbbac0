import Crypto
import Foundation
import TillLedger

/// The Standard Webhooks specification's signing (standardwebhooks.com): what every delivery carries, so that a
/// receiver checks it with the specification's libraries in any language, or by hand.
///
/// - `webhook-id`: the event's id, the same for every attempt;
/// - `webhook-timestamp`: the attempt's time, whole seconds since 1970;
/// - `webhook-signature`: `v1,` and the base64 of HMAC-SHA256 over `id.timestamp.body`, keyed with the bytes whose
///   base64 follows `whsec_` in the endpoint's secret; during a rotation, the same by the previous secret after a
///   space.
enum StandardWebhooks {
    static let secretPrefix = "whsec_"

    /// A new secret: `whsec_` and the base64 of 32 random bytes (the specification allows 24 to 64).
    static func newSecret() -> String {
        let key = SymmetricKey(size: .bits256)
        return secretPrefix + key.withUnsafeBytes { Data($0).base64EncodedString() }
    }

    /// The key a secret names; nil for one that is not `whsec_` and base64.
    static func key(of secret: String) -> SymmetricKey? {
        guard secret.hasPrefix(secretPrefix),
            let bytes = Data(base64Encoded: String(secret.dropFirst(secretPrefix.count))), !bytes.isEmpty
        else { return nil }
        return SymmetricKey(data: bytes)
    }

    /// `v1,<signature>` of one message by one secret.
    static func signature(id: String, timestamp: Int64, body: [UInt8], key: SymmetricKey) -> String {
        var mac = HMAC<SHA256>(key: key)
        mac.update(data: Array("\(id).\(timestamp).".utf8))
        mac.update(data: body)
        return "v1," + Data(mac.finalize()).base64EncodedString()
    }

    /// The `webhook-signature` header: a signature by each key, separated by spaces.
    static func signatureHeader(id: String, timestamp: Int64, body: [UInt8], keys: [SymmetricKey]) -> String {
        keys.map { signature(id: id, timestamp: timestamp, body: body, key: $0) }.joined(separator: " ")
    }
}
