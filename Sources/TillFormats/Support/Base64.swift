/// Base64 and base64url without Foundation, strict about the alphabet (JWS segments must be base64url
/// without padding; receipts are standard base64, padded, possibly with line breaks).
public enum Base64 {
    /// The alphabet a decoder accepts.
    public enum Alphabet: Sendable {
        /// `+` and `/`, `=` padding optional, ASCII whitespace skipped (receipts, x5c certificates).
        case standard
        /// `-` and `_`, no padding, no whitespace (JWS segments, RFC 7515).
        case url
    }

    private static let invalid: UInt8 = 0xFF
    private static let skip: UInt8 = 0xFE

    private static let standardTable: [UInt8] = makeTable(
        plus: UInt8(ascii: "+"),
        slash: UInt8(ascii: "/"),
        whitespace: true
    )
    private static let urlTable: [UInt8] = makeTable(
        plus: UInt8(ascii: "-"),
        slash: UInt8(ascii: "_"),
        whitespace: false
    )

    private static func makeTable(plus: UInt8, slash: UInt8, whitespace: Bool) -> [UInt8] {
        var table = [UInt8](repeating: invalid, count: 256)
        for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8.enumerated() {
            table[Int(c)] = UInt8(i)
        }
        table[Int(plus)] = 62
        table[Int(slash)] = 63
        if whitespace {
            for c in [9, 10, 13, 32] { table[c] = skip }
        }
        return table
    }

    /// Decodes `input`; nil when it holds a character outside the alphabet, misplaced padding, or a dangling bit group.
    public static func decode<Input: Collection<UInt8>>(_ input: Input, alphabet: Alphabet) -> [UInt8]? {
        // Contiguous bytes (a native string's UTF-8, an array) are read through a pointer: the generic loop
        // costs a witness-table call per character (7% of a verifyReceipt answer, on a 6 KB receipt).
        let contiguous = input.withContiguousStorageIfAvailable { bytes -> [UInt8]? in
            if alphabet == .url { return decodeURL(bytes) }
            // Standard base64 with no line breaks (what apps send) four characters at a time, with its padding;
            // anything else (whitespace in the text) goes through the general loop, a byte at a time.
            var count = bytes.count
            if count % 4 == 0 {
                if count > 0 && bytes[count - 1] == UInt8(ascii: "=") { count -= 1 }
                if count > 0 && bytes[count - 1] == UInt8(ascii: "=") { count -= 1 }
            }
            if let decoded = decodeQuads(UnsafeBufferPointer(rebasing: bytes[0..<count]), table: standardTable) {
                return decoded
            }
            return decodeGeneral(bytes, alphabet: alphabet)
        }
        if let contiguous { return contiguous }
        return decodeGeneral(input, alphabet: alphabet)
    }

    /// base64url without padding or whitespace, four characters at a time.
    private static func decodeURL(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        decodeQuads(input, table: urlTable)
    }

    /// Characters of `table`'s alphabet with no padding or whitespace, four at a time.
    private static func decodeQuads(_ input: UnsafeBufferPointer<UInt8>, table values: [UInt8]) -> [UInt8]? {
        let count = input.count
        guard count % 4 != 1 else { return nil }
        let outputCount = count / 4 * 3 + (count % 4 == 0 ? 0 : count % 4 - 1)
        var valid = true
        let output = values.withUnsafeBufferPointer { table in
            [UInt8](unsafeUninitializedCapacity: outputCount) { buffer, initialized in
                var i = 0
                var o = 0
                while i + 4 <= count {
                    let a = table[Int(input[i])], b = table[Int(input[i + 1])]
                    let c = table[Int(input[i + 2])], d = table[Int(input[i + 3])]
                    if (a | b | c | d) & 0xC0 != 0 {
                        valid = false
                        break
                    }
                    let chunk = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    buffer[o] = UInt8(truncatingIfNeeded: chunk >> 16)
                    buffer[o + 1] = UInt8(truncatingIfNeeded: chunk >> 8)
                    buffer[o + 2] = UInt8(truncatingIfNeeded: chunk)
                    i += 4
                    o += 3
                }
                let rest = count - i
                if valid, rest >= 2 {
                    let a = table[Int(input[i])], b = table[Int(input[i + 1])]
                    let c = rest == 3 ? table[Int(input[i + 2])] : 0
                    if (a | b | c) & 0xC0 != 0 {
                        valid = false
                    } else {
                        let chunk = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6
                        buffer[o] = UInt8(truncatingIfNeeded: chunk >> 16)
                        o += 1
                        if rest == 3 {
                            buffer[o] = UInt8(truncatingIfNeeded: chunk >> 8)
                            o += 1
                        }
                        // The unused low bits of the last character must be zero.
                        if chunk & (rest == 2 ? 0xFFFF : 0xFF) != 0 { valid = false }
                    }
                }
                initialized = valid ? o : 0
            }
        }
        return valid ? output : nil
    }

    private static func decodeGeneral<Input: Collection<UInt8>>(_ input: Input, alphabet: Alphabet) -> [UInt8]? {
        let table = alphabet == .standard ? standardTable : urlTable
        var output: [UInt8] = []
        output.reserveCapacity(input.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        var padding = 0
        var characters = 0
        let decoded: Bool = table.withUnsafeBufferPointer { table in
            for c in input {
                if c == UInt8(ascii: "=") {
                    guard alphabet == .standard else { return false }
                    padding += 1
                    continue
                }
                let value = table[Int(c)]
                if value == skip { continue }
                guard value != invalid, padding == 0 else { return false }
                characters += 1
                accumulator = accumulator << 6 | UInt32(value)
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                }
            }
            return true
        }
        guard decoded else { return nil }
        // 2 or 4 leftover bits are fine if they are zero; 6 means a lone character.
        guard bits != 6, accumulator & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        if padding > 0 {
            guard padding <= 2, (characters + padding) % 4 == 0 else { return nil }
        }
        return output
    }

    /// Decodes a string.
    public static func decode(_ string: some StringProtocol, alphabet: Alphabet) -> [UInt8]? {
        decode(string.utf8, alphabet: alphabet)
    }

    private static let standardCharacters = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8
    )
    private static let urlCharacters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Encodes bytes: standard alphabet with padding, or base64url without.
    public static func encode<Bytes: Collection<UInt8>>(_ bytes: Bytes, alphabet: Alphabet = .standard) -> String {
        let characters = alphabet == .standard ? standardCharacters : urlCharacters
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var iterator = bytes.makeIterator()
        while let a = iterator.next() {
            let b = iterator.next()
            let c = iterator.next()
            let chunk = UInt32(a) << 16 | UInt32(b ?? 0) << 8 | UInt32(c ?? 0)
            output.append(characters[Int(chunk >> 18 & 63)])
            output.append(characters[Int(chunk >> 12 & 63)])
            if b != nil {
                output.append(characters[Int(chunk >> 6 & 63)])
            } else if alphabet == .standard {
                output.append(UInt8(ascii: "="))
            }
            if c != nil {
                output.append(characters[Int(chunk & 63)])
            } else if alphabet == .standard {
                output.append(UInt8(ascii: "="))
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
