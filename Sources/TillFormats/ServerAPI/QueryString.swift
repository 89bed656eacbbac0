import Foundation

/// URL query strings as ordered name/value pairs: the App Store Server API repeats names
/// (`productId=a&productId=b`) and its clients send parameters in a fixed order.
public enum QueryString {
    /// The characters left unescaped in names and values (RFC 3986 unreserved).
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    )

    /// `name=value&name=value`, percent-encoding everything but unreserved characters.
    public static func format(_ pairs: [(String, String)]) -> String {
        pairs.map { "\(escape($0.0))=\(escape($0.1))" }.joined(separator: "&")
    }

    /// The pairs of a query string (without the leading `?`), in order. A name without `=` has an
    /// empty value; `+` is kept as a plus sign, as URLComponents does.
    public static func parse(_ query: String) -> [(String, String)] {
        query.split(separator: "&", omittingEmptySubsequences: true).map { part in
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(pieces[0])
            let value = pieces.count > 1 ? String(pieces[1]) : ""
            return (name.removingPercentEncoding ?? name, value.removingPercentEncoding ?? value)
        }
    }

    private static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }
}
