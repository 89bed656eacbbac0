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

    private static let standardTable: [UInt8] = makeTable(plus: UInt8(ascii: "+"), slash: UInt8(ascii: "/"), whitespace: true)
    private static let urlTable: [UInt8] = makeTable(plus: UInt8(ascii: "-"), slash: UInt8(ascii: "_"), whitespace: false)

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

    private static let standardCharacters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
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
