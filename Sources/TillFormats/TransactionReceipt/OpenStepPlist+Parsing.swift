extension OpenStepPlist {
    /// Parses a document (UTF-8 bytes) holding one value followed only by whitespace.
    ///
    /// Never traps on malformed input: every problem is thrown as an ``OpenStepPlistError`` naming
    /// what was found and at which byte. Nesting deeper than 256 is refused whatever the limits say,
    /// so the recursive parser stays far from the end of the stack.
    public init(parsing bytes: some Collection<UInt8>, limits: Limits = .default) throws(OpenStepPlistError) {
        guard bytes.count <= limits.maxBytes else {
            throw .tooLarge.at(0, "the document has \(bytes.count) bytes, more than the limit of \(limits.maxBytes)")
        }
        var parser = Parser(bytes: Array(bytes), maxDepth: min(max(limits.maxDepth, 0), 256))
        self = try parser.parseDocument()
    }

    /// Parses a document held in a string.
    public init(parsing text: String, limits: Limits = .default) throws(OpenStepPlistError) {
        try self.init(parsing: Array(text.utf8), limits: limits)
    }
}

/// A recursive-descent parser over the bytes of one document.
private struct Parser {
    let bytes: [UInt8]
    let maxDepth: Int
    var index = 0

    init(bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    mutating func parseDocument() throws(OpenStepPlistError) -> OpenStepPlist {
        skipWhitespace()
        guard index < bytes.count else { throw .unexpectedEnd.at(index, "the document holds no value") }
        let value = try parseValue(depth: 0)
        skipWhitespace()
        guard index == bytes.count else {
            throw .trailingData.at(index, "\(describe(bytes[index])) after the top-level value")
        }
        return value
    }

    private mutating func parseValue(depth: Int) throws(OpenStepPlistError) -> OpenStepPlist {
        skipWhitespace()
        guard index < bytes.count else { throw .unexpectedEnd.at(index, "expected a value") }
        switch bytes[index] {
        case OpenStepByte.openBrace: return try parseDictionary(depth: depth + 1)
        case OpenStepByte.openParen: return try parseArray(depth: depth + 1)
        default: return .string(try parseString(expecting: "a value"))
        }
    }

    private mutating func parseDictionary(depth: Int) throws(OpenStepPlistError) -> OpenStepPlist {
        guard depth <= maxDepth else { throw .tooDeep.at(index, "more than \(maxDepth) nested containers") }
        index += 1  // {
        var entries: [OpenStepPlist.Entry] = []
        var keys = Set<String>()
        while true {
            skipWhitespace()
            guard index < bytes.count else {
                throw .unexpectedEnd.at(index, "unterminated dictionary: expected a key or '}'")
            }
            if bytes[index] == OpenStepByte.closeBrace {
                index += 1
                return .dictionary(entries)
            }
            let keyOffset = index
            let key = try parseString(expecting: "a key or '}'")
            guard keys.insert(key).inserted else {
                throw .duplicateKey.at(keyOffset, "the key \"\(key)\" appears twice")
            }
            try expect(OpenStepByte.equals, "'=' after the key \"\(key)\"")
            let value = try parseValue(depth: depth)
            try expect(OpenStepByte.semicolon, "';' after the value of \"\(key)\"")
            entries.append(OpenStepPlist.Entry(key: key, value: value))
        }
    }

    private mutating func parseArray(depth: Int) throws(OpenStepPlistError) -> OpenStepPlist {
        guard depth <= maxDepth else { throw .tooDeep.at(index, "more than \(maxDepth) nested containers") }
        index += 1  // (
        var elements: [OpenStepPlist] = []
        while true {
            skipWhitespace()
            guard index < bytes.count else {
                throw .unexpectedEnd.at(index, "unterminated array: expected a value or ')'")
            }
            if bytes[index] == OpenStepByte.closeParen {
                index += 1
                return .array(elements)
            }
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw .unexpectedEnd.at(index, "unterminated array: expected ',' or ')'") }
            switch bytes[index] {
            case OpenStepByte.comma: index += 1
            case OpenStepByte.closeParen: continue
            default:
                throw .unexpectedCharacter.at(index, "expected ',' or ')' in an array, found \(describe(bytes[index]))")
            }
        }
    }

    /// A quoted or bare string; `expecting` names what the caller wanted, for the error message.
    private mutating func parseString(expecting: String) throws(OpenStepPlistError) -> String {
        let byte = bytes[index]
        if byte == OpenStepByte.quote { return try parseQuoted() }
        guard OpenStepByte.isBare(byte) else {
            throw .unexpectedCharacter.at(index, "expected \(expecting), found \(describe(byte))")
        }
        let start = index
        while index < bytes.count, OpenStepByte.isBare(bytes[index]) { index += 1 }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private mutating func parseQuoted() throws(OpenStepPlistError) -> String {
        let start = index
        index += 1  // opening quote
        var utf8: [UInt8] = []
        while true {
            guard index < bytes.count else { throw .unterminatedString.at(start, "the string has no closing quote") }
            let byte = bytes[index]
            index += 1
            switch byte {
            case OpenStepByte.quote:
                guard let text = String(validating: utf8, as: UTF8.self) else {
                    throw .invalidUTF8.at(start, "the string is not valid UTF-8")
                }
                return text
            case OpenStepByte.backslash:
                try parseEscape(into: &utf8)
            default:
                utf8.append(byte)
            }
        }
    }

    /// Reads the escape after a backslash (already consumed) and appends its UTF-8 bytes.
    private mutating func parseEscape(into utf8: inout [UInt8]) throws(OpenStepPlistError) {
        let escapeOffset = index - 1
        guard index < bytes.count else {
            throw .unterminatedString.at(escapeOffset, "the document ends inside an escape")
        }
        let byte = bytes[index]
        index += 1
        switch byte {
        case OpenStepByte.quote, OpenStepByte.backslash: utf8.append(byte)
        case UInt8(ascii: "n"): utf8.append(0x0A)
        case UInt8(ascii: "t"): utf8.append(0x09)
        case UInt8(ascii: "r"): utf8.append(0x0D)
        case UInt8(ascii: "a"): utf8.append(0x07)
        case UInt8(ascii: "b"): utf8.append(0x08)
        case UInt8(ascii: "f"): utf8.append(0x0C)
        case UInt8(ascii: "v"): utf8.append(0x0B)
        case UInt8(ascii: "U"):
            guard let unit = readHex4() else {
                throw .invalidEscape.at(escapeOffset, "\\U must be followed by four hexadecimal digits")
            }
            let scalar: Unicode.Scalar?
            switch unit {
            case 0xD800...0xDBFF:
                guard index + 1 < bytes.count, bytes[index] == OpenStepByte.backslash,
                    bytes[index + 1] == UInt8(ascii: "U")
                else {
                    throw .invalidEscape.at(escapeOffset, "a high surrogate must be followed by a \\U low surrogate")
                }
                index += 2
                guard let low = readHex4(), (0xDC00...0xDFFF).contains(low) else {
                    throw .invalidEscape.at(escapeOffset, "a high surrogate must be followed by a \\U low surrogate")
                }
                scalar = Unicode.Scalar(0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00))
            case 0xDC00...0xDFFF:
                throw .invalidEscape.at(escapeOffset, "a low surrogate without a high surrogate")
            default:
                scalar = Unicode.Scalar(unit)
            }
            guard let scalar else { throw .invalidEscape.at(escapeOffset, "not a Unicode scalar") }
            utf8.append(contentsOf: scalar.utf8)
        case OpenStepByte.zero...OpenStepByte.seven:
            var value = Int(byte - OpenStepByte.zero)
            var digits = 1
            while digits < 3, index < bytes.count, (OpenStepByte.zero...OpenStepByte.seven).contains(bytes[index]) {
                value = value * 8 + Int(bytes[index] - OpenStepByte.zero)
                index += 1
                digits += 1
            }
            guard value < 0x80 else {
                throw .invalidEscape.at(
                    escapeOffset,
                    "octal escapes above \\177 (NeXTSTEP-encoded bytes) are not supported"
                )
            }
            utf8.append(UInt8(value))
        default:
            throw .invalidEscape.at(escapeOffset, "unknown escape \\\(describe(byte, quoted: false))")
        }
    }

    /// Reads exactly four hexadecimal digits.
    private mutating func readHex4() -> UInt16? {
        guard index + 4 <= bytes.count else { return nil }
        var value: UInt16 = 0
        for offset in 0..<4 {
            guard let digit = OpenStepByte.hexValue(bytes[index + offset]) else { return nil }
            value = value << 4 | UInt16(digit)
        }
        index += 4
        return value
    }

    private mutating func expect(_ byte: UInt8, _ what: String) throws(OpenStepPlistError) {
        skipWhitespace()
        guard index < bytes.count else { throw .unexpectedEnd.at(index, "expected \(what)") }
        guard bytes[index] == byte else {
            throw .unexpectedCharacter.at(index, "expected \(what), found \(describe(bytes[index]))")
        }
        index += 1
    }

    private mutating func skipWhitespace() {
        while index < bytes.count, OpenStepByte.isWhitespace(bytes[index]) { index += 1 }
    }

    private func describe(_ byte: UInt8, quoted: Bool = true) -> String {
        if byte >= 0x21, byte < 0x7F {
            let character = String(UnicodeScalar(byte))
            return quoted ? "'\(character)'" : character
        }
        let hex = String(byte, radix: 16, uppercase: true)
        return "byte 0x\(hex.count == 1 ? "0" + hex : hex)"
    }
}

/// The bytes the grammar is made of.
private enum OpenStepByte {
    static let openBrace = UInt8(ascii: "{")
    static let closeBrace = UInt8(ascii: "}")
    static let openParen = UInt8(ascii: "(")
    static let closeParen = UInt8(ascii: ")")
    static let quote = UInt8(ascii: "\"")
    static let backslash = UInt8(ascii: "\\")
    static let equals = UInt8(ascii: "=")
    static let semicolon = UInt8(ascii: ";")
    static let comma = UInt8(ascii: ",")
    static let zero = UInt8(ascii: "0")
    static let seven = UInt8(ascii: "7")

    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// Characters allowed in an unquoted string.
    static func isBare(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "_"), UInt8(ascii: "$"), UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: ":"),
            UInt8(ascii: "."), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
