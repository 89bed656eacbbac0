import Foundation

/// The date spellings of Apple's legacy formats, converted without Foundation formatters
/// (they are on the hot path of receipt decoding and must not depend on the host's time zone data).
///
/// - receipts (ASN.1 IA5String): `2015-08-13T07:50:46Z` (RFC 3339, UTC, no fraction)
/// - verifyReceipt and iOS 6 receipts: `2015-08-13 07:50:46 Etc/GMT`, and
///   `2015-08-13 00:50:46 America/Los_Angeles` for the `_pst` variants
public enum ReceiptDate {
    /// Parses `YYYY-MM-DDTHH:MM:SSZ` (also accepts a fraction and a `+hh:mm` offset). Nil when malformed.
    public static func parseRFC3339<Bytes: Collection<UInt8>>(bytes text: Bytes) -> Date? where Bytes.Index == Int {
        guard let seconds = parseRFC3339Seconds(bytes: text) else { return nil }
        return Date(timeIntervalSince1970: Double(seconds))
    }

    /// Parses `YYYY-MM-DDTHH:MM:SSZ` to whole seconds since 1970.
    public static func parseRFC3339Seconds<Bytes: Collection<UInt8>>(bytes text: Bytes) -> Int64?
    where Bytes.Index == Int {
        let count = text.count
        guard count >= 20 else { return nil }
        let s = text.startIndex
        func digits(_ offset: Int, _ length: Int) -> Int? {
            var value = 0
            for i in offset..<(offset + length) {
                let c = text[s + i]
                guard c >= 0x30, c <= 0x39 else { return nil }
                value = value * 10 + Int(c - 0x30)
            }
            return value
        }
        guard text[s + 4] == 0x2D, text[s + 7] == 0x2D, text[s + 10] == 0x54 || text[s + 10] == 0x74,
            text[s + 13] == 0x3A, text[s + 16] == 0x3A,
            let year = digits(0, 4), let month = digits(5, 2), let day = digits(8, 2),
            let hour = digits(11, 2), let minute = digits(14, 2), let second = digits(17, 2)
        else { return nil }
        var i = 19
        if text[s + i] == 0x2E {  // fraction, ignored
            i += 1
            while i < count, text[s + i] >= 0x30, text[s + i] <= 0x39 { i += 1 }
        }
        guard i < count else { return nil }
        var offsetSeconds = 0
        switch text[s + i] {
        case 0x5A, 0x7A:  // Z
            guard i + 1 == count else { return nil }
        case 0x2B, 0x2D:  // +hh:mm / -hh:mm
            guard i + 6 == count, text[s + i + 3] == 0x3A, let oh = digits(i + 1, 2), let om = digits(i + 4, 2),
                oh < 24, om < 60
            else { return nil }
            offsetSeconds = (oh * 3600 + om * 60) * (text[s + i] == 0x2B ? 1 : -1)
        default:
            return nil
        }
        guard isValid(year: year, month: month, day: day), hour < 24, minute < 60, second < 61 else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetSeconds)
    }

    /// Parses a string date such as an attribute value.
    public static func parseRFC3339(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { parseRFC3339(bytes: $0) }
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` in UTC (whole seconds).
    public static func formatRFC3339(_ date: Date) -> String {
        let c = civil(fromSeconds: Int64(date.timeIntervalSince1970.rounded(.down)))
        return "\(pad(c.year, 4))-\(pad(c.month))-\(pad(c.day))T\(pad(c.hour)):\(pad(c.minute)):\(pad(c.second))Z"
    }

    /// `YYYY-MM-DD HH:MM:SS Etc/GMT`.
    public static func formatGMT(_ date: Date) -> String {
        let c = civil(fromSeconds: Int64(date.timeIntervalSince1970.rounded(.down)))
        return
            "\(pad(c.year, 4))-\(pad(c.month))-\(pad(c.day)) \(pad(c.hour)):\(pad(c.minute)):\(pad(c.second)) Etc/GMT"
    }

    /// `YYYY-MM-DD HH:MM:SS America/Los_Angeles`, in Pacific time with US daylight saving rules.
    public static func formatPacific(_ date: Date) -> String {
        let utc = Int64(date.timeIntervalSince1970.rounded(.down))
        let c = civil(fromSeconds: utc + Int64(pacificOffset(utcSeconds: utc)))
        return
            "\(pad(c.year, 4))-\(pad(c.month))-\(pad(c.day)) \(pad(c.hour)):\(pad(c.minute)):\(pad(c.second)) America/Los_Angeles"
    }

    /// Parses `YYYY-MM-DD HH:MM:SS Etc/GMT` (the zone suffix may also be `GMT` or `UTC`).
    public static func parseGMT(_ text: String) -> Date? {
        let parts = text.split(separator: " ")
        guard parts.count == 3, ["Etc/GMT", "GMT", "UTC"].contains(parts[2]) else { return nil }
        return parseRFC3339("\(parts[0])T\(parts[1])Z" as String)
    }

    /// The offset of Pacific time from UTC at a UTC instant, in seconds (−8 h, or −7 h in daylight saving time).
    static func pacificOffset(utcSeconds: Int64) -> Int {
        let year = civil(fromSeconds: utcSeconds).year
        let (startMonth, startWeek, endMonth, endWeek): (Int, Int, Int, Int) =
            year >= 2007 ? (3, 2, 11, 1) : (4, 1, 10, -1)
        // Daylight saving starts at 02:00 PST (10:00 UTC) and ends at 02:00 PDT (09:00 UTC).
        let start =
            Int64(daysFromCivil(year: year, month: startMonth, day: nthSunday(year, startMonth, startWeek))) * 86_400
            + 10 * 3600
        let end =
            Int64(daysFromCivil(year: year, month: endMonth, day: nthSunday(year, endMonth, endWeek))) * 86_400 + 9
            * 3600
        return (utcSeconds >= start && utcSeconds < end) ? -7 * 3600 : -8 * 3600
    }

    /// The day of the month of the `n`th Sunday (or the last one when `n` is −1).
    private static func nthSunday(_ year: Int, _ month: Int, _ n: Int) -> Int {
        if n > 0 {
            let firstWeekday = weekday(year: year, month: month, day: 1)  // 0 = Sunday
            return 1 + (7 - firstWeekday) % 7 + (n - 1) * 7
        }
        let last = daysInMonth(year: year, month: month)
        return last - weekday(year: year, month: month, day: last)
    }

    private static func weekday(year: Int, month: Int, day: Int) -> Int {
        let days = daysFromCivil(year: year, month: month, day: day)  // 1970-01-01 was a Thursday
        return Int(((days % 7) + 11) % 7)
    }

    private static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    private static func isValid(year: Int, month: Int, day: Int) -> Bool {
        month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year: year, month: month)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    struct Civil { var year, month, day, hour, minute, second: Int }

    static func civil(fromSeconds seconds: Int64) -> Civil {
        var days = seconds / 86_400
        var rest = seconds % 86_400
        if rest < 0 {
            rest += 86_400
            days -= 1
        }
        let z = Int(days) + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        let r = Int(rest)
        return Civil(year: year, month: month, day: day, hour: r / 3600, minute: r % 3600 / 60, second: r % 60)
    }

    private static func pad(_ value: Int, _ width: Int = 2) -> String {
        let text = String(abs(value))
        let padded = text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
        return value < 0 ? "-" + padded : padded
    }
}
