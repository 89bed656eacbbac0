import Foundation

/// Percent-encoding of ids put into URL paths and query strings.
enum PathComponent {
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    )

    /// `value` as one path segment: everything but RFC 3986's unreserved characters is encoded.
    static func encode(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? value
    }

    /// `value` as a query parameter value.
    static func encodeQuery(_ value: String) -> String { encode(value) }
}
