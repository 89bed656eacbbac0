// docs/events.md: a Standard Webhooks signature checked by hand with swift-crypto, as a receiver in Swift would.
import Crypto
import Foundation

func isValid(body: [UInt8], id: String, timestamp: String, signatures: String, secret: String) -> Bool {
    guard secret.hasPrefix("whsec_"), let key = Data(base64Encoded: String(secret.dropFirst(6))),
        let sent = TimeInterval(timestamp), abs(Date().timeIntervalSince1970 - sent) <= 300
    else { return false }
    let signed = Data("\(id).\(timestamp).".utf8) + body
    for signature in signatures.split(separator: " ") {
        let parts = signature.split(separator: ",", maxSplits: 1)
        guard parts.count == 2, parts[0] == "v1", let mac = Data(base64Encoded: String(parts[1])) else { continue }
        // Compared in constant time.
        if HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: signed, using: SymmetricKey(data: key)) {
            return true
        }
    }
    return false
}
