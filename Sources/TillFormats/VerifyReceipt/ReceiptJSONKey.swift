import Foundation

/// A coding key made from any string: verifyReceipt JSON derives several keys from one field
/// (`purchase_date`, `purchase_date_ms`, `purchase_date_pst`), so its types code by name.
struct ReceiptJSONKey: CodingKey, ExpressibleByStringLiteral {
    var stringValue: String
    var intValue: Int? { nil }

    init(_ name: String) { stringValue = name }
    init(stringLiteral name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// How a verifyReceipt format writes a boolean as a string.
enum ReceiptJSONBoolStyle {
    /// `"true"` / `"false"` (`is_trial_period`, `is_upgraded`).
    case word
    /// `"1"` / `"0"` (`is_in_billing_retry_period`).
    case digit
}

// Reading: Apple writes numbers and booleans as strings; numbers and booleans in JSON form are
// accepted too. A value of the wrong shape throws; an empty string reads as absent.
extension KeyedDecodingContainer where Key == ReceiptJSONKey {
    func receiptString(_ name: String) throws -> String? {
        let key = ReceiptJSONKey(name)
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        if let text = try? decode(String.self, forKey: key) { return text }
        if let number = try? decode(Int64.self, forKey: key) { return String(number) }
        if let flag = try? decode(Bool.self, forKey: key) { return flag ? "true" : "false" }
        throw DecodingError.typeMismatch(
            String.self,
            .init(codingPath: codingPath + [key], debugDescription: "expected a string")
        )
    }

    func receiptInt(_ name: String) throws -> Int64? {
        let key = ReceiptJSONKey(name)
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        if let number = try? decode(Int64.self, forKey: key) { return number }
        let text = try decode(String.self, forKey: key)
        if text.isEmpty { return nil }
        guard let number = Int64(text) else {
            throw DecodingError.dataCorruptedError(
                forKey: key,
                in: self,
                debugDescription: "expected an integer: \(text)"
            )
        }
        return number
    }

    func receiptBool(_ name: String) throws -> Bool? {
        let key = ReceiptJSONKey(name)
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        if let flag = try? decode(Bool.self, forKey: key) { return flag }
        if let number = try? decode(Int.self, forKey: key) { return number != 0 }
        switch try decode(String.self, forKey: key) {
        case "true", "1": return true
        case "false", "0": return false
        case "": return nil
        case let text:
            throw DecodingError.dataCorruptedError(
                forKey: key,
                in: self,
                debugDescription: "expected a boolean: \(text)"
            )
        }
    }

    /// A date written as milliseconds (`ms`) and as `YYYY-MM-DD HH:MM:SS Etc/GMT` (`gmt`);
    /// the milliseconds win when both are present. The Pacific spelling is not read.
    func receiptDate(ms msName: String, gmt gmtName: String) throws -> Date? {
        if let ms = try receiptInt(msName) { return Date(millisecondsSince1970: ms) }
        guard let text = try receiptString(gmtName), !text.isEmpty else { return nil }
        guard let date = ReceiptDate.parseGMT(text) else {
            throw DecodingError.dataCorruptedError(
                forKey: ReceiptJSONKey(gmtName),
                in: self,
                debugDescription: "expected a date like 2015-08-13 07:50:46 Etc/GMT: \(text)"
            )
        }
        return date
    }

    /// A date written as the triple `base`, `base_ms`, `base_pst`.
    func receiptDate(_ base: String) throws -> Date? {
        try receiptDate(ms: base + "_ms", gmt: base)
    }

    func receiptValue<Value: RawRepresentable>(_ name: String, as type: Value.Type = Value.self) throws -> Value?
    where Value.RawValue == String {
        try receiptString(name).flatMap(Value.init(rawValue:))
    }

    func receiptValue<Value: RawRepresentable>(_ name: String, as type: Value.Type = Value.self) throws -> Value?
    where Value.RawValue == Int {
        guard let number = try receiptInt(name) else { return nil }
        guard let value = Int(exactly: number) else {
            throw DecodingError.dataCorruptedError(
                forKey: ReceiptJSONKey(name),
                in: self,
                debugDescription: "integer out of range: \(number)"
            )
        }
        return Value(rawValue: value)
    }
}

// Writing: absent values are left out; numbers and booleans are written as strings unless the
// format has them as JSON values (`…AsNumber`).
extension KeyedEncodingContainer where Key == ReceiptJSONKey {
    mutating func encodeReceipt(_ value: String?, _ name: String) throws {
        guard let value else { return }
        try encode(value, forKey: ReceiptJSONKey(name))
    }

    mutating func encodeReceipt<Number: BinaryInteger>(_ value: Number?, _ name: String) throws {
        guard let value else { return }
        try encode(String(value), forKey: ReceiptJSONKey(name))
    }

    mutating func encodeReceiptAsNumber(_ value: Int64?, _ name: String) throws {
        guard let value else { return }
        try encode(value, forKey: ReceiptJSONKey(name))
    }

    mutating func encodeReceipt(_ value: Bool?, _ name: String, style: ReceiptJSONBoolStyle) throws {
        guard let value else { return }
        let text =
            switch style {
            case .word: value ? "true" : "false"
            case .digit: value ? "1" : "0"
            }
        try encode(text, forKey: ReceiptJSONKey(name))
    }

    mutating func encodeReceipt<Value: RawRepresentable>(_ value: Value?, _ name: String) throws
    where Value.RawValue == String {
        try encodeReceipt(value?.rawValue, name)
    }

    mutating func encodeReceipt<Value: RawRepresentable>(_ value: Value?, _ name: String) throws
    where Value.RawValue == Int {
        try encodeReceipt(value?.rawValue, name)
    }

    /// Writes a date as milliseconds (string), GMT and Pacific spellings under the three names.
    mutating func encodeReceiptDate(_ date: Date?, ms msName: String, gmt gmtName: String, pst pstName: String) throws {
        guard let date else { return }
        try encode(ReceiptDate.formatGMT(date), forKey: ReceiptJSONKey(gmtName))
        try encode(String(date.millisecondsSince1970), forKey: ReceiptJSONKey(msName))
        try encode(ReceiptDate.formatPacific(date), forKey: ReceiptJSONKey(pstName))
    }

    /// Writes a date as the triple `base`, `base_ms`, `base_pst`.
    mutating func encodeReceiptDate(_ date: Date?, _ base: String) throws {
        try encodeReceiptDate(date, ms: base + "_ms", gmt: base, pst: base + "_pst")
    }
}
