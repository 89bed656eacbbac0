import Crypto
import Foundation
import TillCatalogue
import TillLedger

/// What a signed download URL grants: one file, to one customer, under one name, until a moment.
public struct DownloadLink: Sendable, Hashable {
    public var bundleId: String
    /// The file's SHA-256, 64 lowercase hex digits: the blob the URL serves.
    public var sha256: String
    public var customerId: String
    /// The file name the download is saved under (`Content-Disposition`).
    public var name: String
    /// UNIX seconds; the URL stops working after this second.
    public var expires: Int64
}

/// Signs and checks download URLs with HMAC-SHA256 under the server secret, so a URL works without the app key:
/// whoever holds it may fetch that one file until it expires.
///
/// The MAC covers a canonical string whose fields are length-prefixed, so that no customer id or file name can
/// move bytes from one field into the next:
///
///     canonical = "till-download-v1" 5( LF length ":" field )  ; bundle, sha256, customer, name, expires
///     length    = 1*DIGIT                                        ; the field's UTF-8 byte count
///     url       = "/v1/content/" bundle "/" sha256 "?name=" name "&customer=" customer
///                 "&expires=" expires "&signature=" 64HEXDIG   ; values percent-encoded
package struct DownloadSigner: Sendable {
    /// Why a URL was refused; a valid one yields its link.
    enum Verdict: Sendable, Hashable {
        case valid(DownloadLink)
        case invalid(Reason)
    }

    enum Reason: Sendable, Hashable {
        /// A parameter is missing or the signature is not what the server made (tampered or foreign).
        case badSignature
        /// The signature is genuine but its time is up.
        case expired
    }

    private let key: SymmetricKey

    init(secret: [UInt8]) {
        precondition(!secret.isEmpty, "a download signer needs the server secret")
        key = SymmetricKey(data: secret)
    }

    /// The relative URL of `link`, signed.
    func url(for link: DownloadLink) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Self.canonical(link), using: key)
        let signature = mac.map { String(format: "%02x", $0) }.joined()
        return "/v1/content/\(Self.encode(link.bundleId))/\(link.sha256)?name=\(Self.encode(link.name))"
            + "&customer=\(Self.encode(link.customerId))&expires=\(link.expires)&signature=\(signature)"
    }

    /// Checks a URL's parts (query values already percent-decoded): the signature first, in constant time, then
    /// the expiry, so that an expired URL is only reported as such when it is genuine.
    func check(
        bundleId: String,
        sha256: String,
        name: String?,
        customerId: String?,
        expires: String?,
        signature: String?,
        now: Date
    ) -> Verdict {
        guard let name, let customerId, let expiresText = expires, let expires = Int64(expiresText),
            let signature, let mac = Self.hexBytes(signature), mac.count == SHA256.byteCount
        else { return .invalid(.badSignature) }
        let link = DownloadLink(
            bundleId: bundleId,
            sha256: sha256,
            customerId: customerId,
            name: name,
            expires: expires
        )
        guard HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: Self.canonical(link), using: key) else {
            return .invalid(.badSignature)
        }
        guard now.timeIntervalSince1970 <= Double(expires) else { return .invalid(.expired) }
        return .valid(link)
    }

    static func canonical(_ link: DownloadLink) -> Data {
        var text = "till-download-v1"
        for field in [link.bundleId, link.sha256, link.customerId, link.name, String(link.expires)] {
            text += "\n\(field.utf8.count):\(field)"
        }
        return Data(text.utf8)
    }

    /// RFC 3986 unreserved characters stay; everything else is percent-encoded (`+` and `&` included).
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    )

    package static func encode(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? value
    }

    private static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
