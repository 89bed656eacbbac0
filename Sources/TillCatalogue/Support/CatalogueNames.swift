/// What an operator may name an app, a product, an entitlement or a credit: Apple's rules where Apple has them, so
/// that every name stands in a URL's path, a log line and the console as it is (a `/` or a newline did not: an app
/// named `a/b` could not be reached again). Checked when a name is made; one stored before these rules stays usable.
enum CatalogueNames {
    /// A bundle ID: 1 to 155 of `A–Z a–z 0–9 - .` (Apple's rule for `CFBundleIdentifier`), not `.` or `..`.
    static func isBundleId(_ text: String) -> Bool {
        (1...155).contains(text.utf8.count) && text != "." && text != ".."
            && text.utf8.allSatisfy { isLetterOrDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
    }

    /// A product ID: 1 to 100 of `A–Z a–z 0–9 _ .` (Apple's rule for In-App Purchase product identifiers), not `.` or
    /// `..`.
    static func isProductId(_ text: String) -> Bool {
        (1...100).contains(text.utf8.count) && text != "." && text != ".."
            && text.utf8.allSatisfy { isLetterOrDigit($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") }
    }

    /// An entitlement's or a credit's name (Till's, not Apple's): 1 to 100 characters, no control character, no
    /// white space at either end.
    static func isLabel(_ text: String) -> Bool {
        (1...100).contains(text.unicodeScalars.count)
            && !text.unicodeScalars.contains { $0.properties.generalCategory == .control }
            && text.first?.isWhitespace == false && text.last?.isWhitespace == false
    }

    private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}
