/// A bounds-checked reader of ASN.1 BER/DER tag-length-value elements over a byte array, without copying.
///
/// ```
/// element ::= identifier length contents
/// length  ::= 0xxxxxxx                  -- short form
///           | 1nnnnnnn n×byte           -- long form (up to 4 bytes here)
///           | 10000000 … 00 00          -- indefinite (BER, constructed only), ends with end-of-contents
/// ```
///
/// Receipts from the App Store are DER; Xcode's are BER with indefinite lengths and a constructed
/// OCTET STRING. Every read is checked against the enclosing element, and nesting is limited, so
/// hostile input ends in an ``ASN1Error`` rather than a crash or unbounded recursion.
struct ASN1Reader {
    let bytes: [UInt8]
    let maximumDepth: Int

    init(_ bytes: [UInt8], maximumDepth: Int = 32) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    /// Reads the element starting at `offset`, which must end by `limit`.
    func element(at offset: Int, limit: Int, depth: Int = 0) throws(ASN1Error) -> ASN1Element {
        guard depth <= maximumDepth else { throw .tooDeep }
        guard offset + 2 <= limit, limit <= bytes.count else { throw .truncated }
        let identifier = bytes[offset]
        guard identifier & 0x1F != 0x1F else { throw .unsupportedTag }
        var cursor = offset + 1
        let first = bytes[cursor]
        cursor += 1
        if first < 0x80 {
            let end = cursor + Int(first)
            guard end <= limit else { throw .truncated }
            return ASN1Element(identifier: identifier, start: offset, contentStart: cursor, contentEnd: end, end: end)
        }
        if first == 0x80 {
            // Indefinite length: only for constructed elements; contents run to an end-of-contents marker.
            guard identifier & 0x20 != 0 else { throw .invalidLength }
            var child = cursor
            while true {
                guard child + 2 <= limit else { throw .truncated }
                if bytes[child] == 0, bytes[child + 1] == 0 {
                    return ASN1Element(
                        identifier: identifier,
                        start: offset,
                        contentStart: cursor,
                        contentEnd: child,
                        end: child + 2,
                        isIndefinite: true
                    )
                }
                child = try element(at: child, limit: limit, depth: depth + 1).end
            }
        }
        let count = Int(first & 0x7F)
        guard count <= 4 else { throw .invalidLength }
        guard cursor + count <= limit else { throw .truncated }
        var length = 0
        for _ in 0..<count {
            length = length << 8 | Int(bytes[cursor])
            cursor += 1
        }
        guard length <= limit - cursor else { throw .truncated }
        return ASN1Element(
            identifier: identifier,
            start: offset,
            contentStart: cursor,
            contentEnd: cursor + length,
            end: cursor + length
        )
    }

    /// Reads the element at `offset` and checks its identifier.
    func element(
        at offset: Int,
        limit: Int,
        expecting identifier: UInt8,
        depth: Int = 0
    ) throws(ASN1Error) -> ASN1Element {
        let element = try element(at: offset, limit: limit, depth: depth)
        guard element.identifier == identifier else {
            throw .unexpectedTag(expected: identifier, found: element.identifier)
        }
        return element
    }

    /// The children of a constructed element, in order.
    func children(of parent: ASN1Element, depth: Int = 0) throws(ASN1Error) -> [ASN1Element] {
        guard parent.isConstructed else { throw .unexpectedPrimitive }
        var result: [ASN1Element] = []
        var offset = parent.contentStart
        while offset < parent.contentEnd {
            let child = try element(at: offset, limit: parent.contentEnd, depth: depth + 1)
            result.append(child)
            offset = child.end
        }
        return result
    }

    /// The contents of an OCTET STRING, primitive or (BER) constructed from primitive chunks.
    func octetString(_ element: ASN1Element, depth: Int = 0) throws(ASN1Error) -> ArraySlice<UInt8> {
        if element.identifier == ASN1Tag.octetString { return bytes[element.contentStart..<element.contentEnd] }
        guard element.identifier == ASN1Tag.octetString | 0x20 else {
            throw .unexpectedTag(expected: ASN1Tag.octetString, found: element.identifier)
        }
        var joined: [UInt8] = []
        for chunk in try children(of: element, depth: depth) {
            joined.append(contentsOf: try octetString(chunk, depth: depth + 1))
        }
        return joined[...]
    }

    /// Where the contents of an OCTET STRING are: in place for a primitive one, in a new buffer for a constructed one.
    func octetStringLocation(_ element: ASN1Element, depth: Int = 0) throws(ASN1Error) -> ([UInt8], Range<Int>) {
        if element.identifier == ASN1Tag.octetString { return (bytes, element.contentStart..<element.contentEnd) }
        let joined = Array(try octetString(element, depth: depth))
        return (joined, 0..<joined.count)
    }

    /// A two's-complement INTEGER that fits in 64 bits.
    func integer(_ element: ASN1Element) throws(ASN1Error) -> Int64 {
        guard element.identifier == ASN1Tag.integer else {
            throw .unexpectedTag(expected: ASN1Tag.integer, found: element.identifier)
        }
        return try Self.integer(bytes[element.contentStart..<element.contentEnd])
    }

    static func integer(_ content: ArraySlice<UInt8>) throws(ASN1Error) -> Int64 {
        guard let first = content.first, content.count <= 8 else { throw .integerOutOfRange }
        var value: Int64 = first & 0x80 != 0 ? -1 : 0
        for byte in content { value = value << 8 | Int64(byte) }
        return value
    }

    /// Whether the element's contents equal `expected` (compares an OBJECT IDENTIFIER's encoding, for example).
    func contents(of element: ASN1Element, equal expected: [UInt8]) -> Bool {
        guard element.contentLength == expected.count else { return false }
        var i = element.contentStart
        for byte in expected {
            if bytes[i] != byte { return false }
            i += 1
        }
        return true
    }

    subscript(_ element: ASN1Element) -> ArraySlice<UInt8> { bytes[element.contentStart..<element.contentEnd] }

    /// The whole encoding of the element, identifier and length included.
    func encoding(of element: ASN1Element) -> ArraySlice<UInt8> { bytes[element.start..<element.end] }
}

/// The position of one element inside an ``ASN1Reader``'s bytes.
struct ASN1Element: Hashable {
    var identifier: UInt8
    var start: Int
    var contentStart: Int
    var contentEnd: Int
    var end: Int
    var isIndefinite = false

    var isConstructed: Bool { identifier & 0x20 != 0 }
    var contentLength: Int { contentEnd - contentStart }
}

/// Identifier octets used by Apple's formats.
enum ASN1Tag {
    static let integer: UInt8 = 0x02
    static let octetString: UInt8 = 0x04
    static let null: UInt8 = 0x05
    static let objectIdentifier: UInt8 = 0x06
    static let utf8String: UInt8 = 0x0C
    static let printableString: UInt8 = 0x13
    static let ia5String: UInt8 = 0x16
    static let sequence: UInt8 = 0x30
    static let set: UInt8 = 0x31
    /// `[0]` constructed, context-specific (EXPLICIT content, IMPLICIT certificates and signed attributes).
    static let context0: UInt8 = 0xA0
    static let context1: UInt8 = 0xA1
}

/// Why bytes are not the ASN.1 structure expected.
enum ASN1Error: Error, Hashable, CustomStringConvertible {
    case truncated
    case invalidLength
    case unsupportedTag
    case unexpectedTag(expected: UInt8, found: UInt8)
    case unexpectedPrimitive
    case integerOutOfRange
    case tooDeep
    case trailingData
    case unsupportedAlgorithm
    case invalidAttribute(type: Int)
    /// More certificates embedded than the limit.
    case tooManyCertificates(limit: Int)
    /// More in-app purchases (attribute 17) than the limit.
    case tooManyPurchases(limit: Int)

    var description: String {
        switch self {
        case .truncated: "an element runs past the end of its container"
        case .invalidLength: "invalid length encoding"
        case .unsupportedTag: "unsupported tag form"
        case .unexpectedTag(let expected, let found):
            "expected tag 0x\(String(expected, radix: 16)), found 0x\(String(found, radix: 16))"
        case .unexpectedPrimitive: "expected a constructed element"
        case .integerOutOfRange: "integer out of range"
        case .tooDeep: "nesting too deep"
        case .trailingData: "unexpected data after the structure"
        case .unsupportedAlgorithm: "unsupported digest or signature algorithm"
        case .invalidAttribute(let type): "receipt attribute \(type) has an invalid value"
        case .tooManyCertificates(let limit): "more than \(limit) certificates embedded"
        case .tooManyPurchases(let limit): "more than \(limit) in-app purchases"
        }
    }
}
