import Foundation
import Testing

@testable import TillSnapshot

/// The snapshot's base64url, written over bytes: the same text as Foundation's base64 with RFC 4648 §5's two letters
/// and no padding, for every length and byte, and nothing but that text decodes.
struct Base64URLTests {
    static func foundation(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        while text.last == "=" { text.removeLast() }
        return text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
    }

    @Test func everyLengthAndByteEncodesAsFoundationsBase64AndDecodesBack() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Base64URL.encode(bytes)
            #expect(text == Self.foundation(bytes), "length \(length)")
            #expect(Base64URL.decode(text) == bytes, "length \(length)")
        }
        let every = (0...255).map(UInt8.init)
        #expect(Base64URL.encode(every) == Self.foundation(every))
        #expect(Base64URL.decode(Base64URL.encode(every)) == every)
    }

    @Test func anythingButCanonicalUnpaddedBase64URLIsRefused() {
        #expect(Base64URL.decode("") == [])
        #expect(Base64URL.decode("QQ") == [0x41])
        for text in ["Q", "QQ==", "QQ=", "Q+8", "Q/8", "QR", "QUF", "QUG", "QUJD RA", "QUJD\n", "é"] {
            #expect(Base64URL.decode(text) == nil, "\(text)")
        }
        // "QUE" is "AA" canonically; "QUF" sets a bit past the last byte.
        #expect(Base64URL.decode("QUE") == [0x41, 0x41])
        #expect(Base64URL.decode("QUF") == nil)
    }
}
