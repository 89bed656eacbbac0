import Foundation
import Testing

@testable import TillFormats

/// `Hex.lowercase`: two lowercase digits a byte, as `String(format: "%02x")` wrote them.
@Suite struct HexTests {
    @Test func everyByteIsTwoLowercaseDigits() {
        let bytes = (0...255).map { UInt8($0) }
        #expect(Hex.lowercase(bytes) == bytes.map { String(format: "%02x", $0) }.joined())
        #expect(Hex.lowercase([UInt8]()) == "")
        #expect(Hex.lowercase([0x0f, 0xa0]) == "0fa0")
    }
}
