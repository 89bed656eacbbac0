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
    /// A date from UNIX epoch milliseconds.
    public init(millisecondsSince1970 ms: Int64) {
        self.init(timeIntervalSince1970: Double(ms) / 1000)
    }

    /// UNIX epoch milliseconds, rounded to the nearest millisecond.
    public var millisecondsSince1970: Int64 {
        Int64((timeIntervalSince1970 * 1000).rounded())
    }
}
