import Foundation

/// JSON coders for Apple's StoreKit 2 / App Store Server API payloads.
///
/// Dates are UNIX epoch milliseconds as JSON numbers. Xcode writes non-integral values
/// (`1697679936049.7297`); they are truncated to whole milliseconds, as Apple's libraries do.
/// Dates are written back as integers.
public enum AppleJSON {
    /// A decoder for Apple's payloads (milliseconds dates, unknown keys ignored).
    public static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            if let whole = try? container.decode(Int64.self) {
                guard Date.acceptedMilliseconds.contains(whole) else {
                    throw DecodingError.dataCorruptedError(in: container, debugDescription: "date out of range")
                }
                return Date(millisecondsSince1970: whole)
            }
            let value = try container.decode(Double.self)
            guard value.isFinite, abs(value) < 1e17 else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "date out of range")
            }
            return Date(millisecondsSince1970: Int64(value.rounded(.towardZero)))
        }
        return decoder
    }

    /// An encoder for Apple's payloads (integral milliseconds dates, sorted keys for stable output).
    public static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(date.millisecondsSince1970)
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

extension Date {
    /// The UNIX epoch milliseconds a date read from Apple's JSON or from a query may have: some 3 million years
    /// either side of 1970. A date beyond is refused as malformed: `Int64.max` milliseconds, say, is a `Date` whose
    /// milliseconds no longer fit in an `Int64` once converted back through `Double`.
    public static let acceptedMilliseconds: ClosedRange<Int64> = -100_000_000_000_000_000...100_000_000_000_000_000

    /// A date from UNIX epoch milliseconds.
    public init(millisecondsSince1970 ms: Int64) {
        self.init(timeIntervalSince1970: Double(ms) / 1000)
    }

    /// UNIX epoch milliseconds, rounded to the nearest millisecond; `Int64.min` or `Int64.max` for a date beyond
    /// (a conversion that does not fit traps, and a request's date must not stop the process).
    public var millisecondsSince1970: Int64 {
        let milliseconds = (timeIntervalSince1970 * 1000).rounded()
        if let exact = Int64(exactly: milliseconds) { return exact }
        return milliseconds < 0 ? .min : .max
    }
}
