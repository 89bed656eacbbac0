import Foundation
import TillFormats

/// Numbers, money and times written for people (the console, the customer timeline), and the forms the console reads.
package enum Readable {
    /// Milliunits as an amount with two decimals and thousands separated: 1234560 → `1,234.56`, -990 → `−0.99`.
    package static func money(_ milliunits: Int64) -> String {
        // On the magnitude: `abs` of the smallest Int64, or a price near the largest plus 5, would trap.
        let magnitude = milliunits.magnitude
        let cents = magnitude / 10 + (magnitude % 10 >= 5 ? 1 : 0)
        let whole = grouped(Int64(cents / 100))
        let fraction = cents % 100
        return (milliunits < 0 ? "−" : "") + whole + "." + (fraction < 10 ? "0" : "") + String(fraction)
    }

    /// `1,234,567`.
    package static func grouped(_ number: Int64) -> String {
        let digits = String(number.magnitude)
        var out = ""
        for (index, character) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { out.append(",") }
            out.append(character)
        }
        return (number < 0 ? "−" : "") + out
    }

    package static func grouped(_ number: Int) -> String { grouped(Int64(number)) }

    /// `2026-11-22 10:33:05 UTC`.
    package static func time(_ milliseconds: Int64?) -> String {
        guard let milliseconds else { return "—" }
        let text = ReceiptDate.formatRFC3339(Date(millisecondsSince1970: milliseconds))
        return String(text.prefix(19)).replacingOccurrences(of: "T", with: " ") + " UTC"
    }

    /// `2026-11-22`.
    package static func date(_ milliseconds: Int64) -> String {
        String(ReceiptDate.formatRFC3339(Date(millisecondsSince1970: milliseconds)).prefix(10))
    }

    /// ISO 8601 for `<time datetime>`.
    package static func iso(_ milliseconds: Int64) -> String {
        ReceiptDate.formatRFC3339(Date(millisecondsSince1970: milliseconds))
    }

    /// A duration for people: `850 ms`, `12 s`, `4 min`, `3 h 20 min`, `2 d 4 h`.
    package static func duration(milliseconds: Int64) -> String {
        let ms = max(0, milliseconds)
        if ms < 1000 { return "\(ms) ms" }
        let seconds = ms / 1000
        if seconds < 120 { return "\(seconds) s" }
        let minutes = seconds / 60
        if minutes < 120 { return "\(minutes) min" }
        let hours = minutes / 60
        if hours < 48 { return "\(hours) h \(minutes % 60) min" }
        return "\(hours / 24) d \(hours % 24) h"
    }

    /// A latency: `0.8 ms`, `120 ms`, `3.2 s`.
    package static func latency(_ milliseconds: Double) -> String {
        if milliseconds < 10 { return String(format: "%.1f ms", milliseconds) }
        if milliseconds < 1000 { return String(format: "%.0f ms", milliseconds) }
        return String(format: "%.1f s", milliseconds / 1000)
    }

    /// `42.5%`.
    package static func percent(_ ratio: Double?) -> String {
        guard let ratio else { return "—" }
        return String(format: "%.1f%%", ratio * 100)
    }

    /// UTC midnight of a `yyyy-mm-dd` date, in milliseconds; nil for anything else.
    package static func day(_ text: String?) -> Int64? {
        guard let text, text.utf8.count == 10, let date = ReceiptDate.parseRFC3339(text + "T00:00:00Z") else {
            return nil
        }
        return date.millisecondsSince1970
    }

    /// `a`, `b`, … as a value for a URL's query.
    package static func query(_ pairs: [(String, String?)]) -> String {
        pairs.compactMap { name, value in value.map { "\(name)=\(percentEncoded($0))" } }.joined(separator: "&")
    }

    /// Percent-encodes everything but unreserved characters (RFC 3986): for a path segment or a query value.
    package static func percentEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    )
}
