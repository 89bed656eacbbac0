import Foundation

/// Base64url without padding (RFC 4648 §5), as JWS and JWK write it. Written over bytes by hand: the first version,
/// Foundation's base64 with its text mapped character by character, was 21% of the server's CPU at 1,000 purchases a
/// second when each answer carried a snapshot of 25 purchases (perf, docs/benchmarks.md); the app SDK does not carry
/// TillFormats' tuned decoder (and its receipt machinery) for this.
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let input = Array(bytes)
        var output = [UInt8]()
        output.reserveCapacity((input.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= input.count {
            let word = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            output.append(alphabet[Int(word >> 18 & 63)])
            output.append(alphabet[Int(word >> 12 & 63)])
            output.append(alphabet[Int(word >> 6 & 63)])
            output.append(alphabet[Int(word & 63)])
            index += 3
        }
        switch input.count - index {
        case 1:
            let word = UInt32(input[index]) << 16
            output.append(alphabet[Int(word >> 18 & 63)])
            output.append(alphabet[Int(word >> 12 & 63)])
        case 2:
            let word = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
            output.append(alphabet[Int(word >> 18 & 63)])
            output.append(alphabet[Int(word >> 12 & 63)])
            output.append(alphabet[Int(word >> 6 & 63)])
        default: break
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Nil for anything but unpadded base64url.
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let input = Array(text.utf8)
        guard input.count % 4 != 1 else { return nil }
        var output = [UInt8]()
        output.reserveCapacity(input.count * 3 / 4)
        var word: UInt32 = 0
        var bits = 0
        for byte in input {
            let value: UInt8
            switch byte {
            case 0x41...0x5A: value = byte - 0x41
            case 0x61...0x7A: value = byte - 0x61 + 26
            case 0x30...0x39: value = byte - 0x30 + 52
            case 0x2D: value = 62
            case 0x5F: value = 63
            default: return nil
            }
            word = word << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: word >> UInt32(bits)))
            }
        }
        // The bits left over must be zero: a canonical encoder writes zeros, and a JWS has one spelling.
        guard word & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return output
    }
}
