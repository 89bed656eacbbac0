/// Lowercase hexadecimal, two digits a byte.
public enum Hex {
    /// `bytes` as lowercase hex. Written over the string's bytes: `String(format: "%02x")` a byte, joined, was 1% of
    /// the simulator's answer to verifyReceipt, which names every receipt by its opaque value in hex.
    public static func lowercase(_ bytes: some Collection<UInt8>) -> String {
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            var index = 0
            for byte in bytes {
                buffer[index] = digits.utf8Start[Int(byte >> 4)]
                buffer[index + 1] = digits.utf8Start[Int(byte & 0x0F)]
                index += 2
            }
            return index
        }
    }
}
