/// Writes ASN.1 elements with definite lengths (DER) or, for constructed elements, the indefinite
/// lengths of BER that Xcode uses in its receipts.
struct ASN1Writer {
    private(set) var bytes: [UInt8] = []
    /// Write constructed elements with indefinite lengths (`30 80 … 00 00`).
    var indefinite = false

    init(indefinite: Bool = false) {
        self.indefinite = indefinite
    }

    /// A primitive element.
    mutating func primitive(_ identifier: UInt8, _ content: some Collection<UInt8>) {
        bytes.append(identifier)
        appendLength(content.count)
        bytes.append(contentsOf: content)
    }

    /// A constructed element whose children `body` writes.
    mutating func constructed(_ identifier: UInt8, _ body: (inout ASN1Writer) throws -> Void) rethrows {
        var inner = ASN1Writer(indefinite: indefinite)
        try body(&inner)
        if indefinite {
            bytes.append(identifier)
            bytes.append(0x80)
            bytes.append(contentsOf: inner.bytes)
            bytes.append(contentsOf: [0, 0])
        } else {
            primitive(identifier, inner.bytes)
        }
    }

    /// A constructed element always written with a definite length (DER inside BER, e.g. certificates).
    mutating func definite(_ identifier: UInt8, _ body: (inout ASN1Writer) throws -> Void) rethrows {
        var inner = ASN1Writer(indefinite: false)
        try body(&inner)
        primitive(identifier, inner.bytes)
    }

    /// Already encoded elements, copied as they are.
    mutating func raw(_ encoded: some Collection<UInt8>) {
        bytes.append(contentsOf: encoded)
    }

    mutating func integer(_ value: Int64) {
        var content: [UInt8] = []
        var v = value
        repeat {
            content.insert(UInt8(truncatingIfNeeded: v), at: 0)
            v >>= 8
        } while !(v == 0 && content[0] & 0x80 == 0) && !(v == -1 && content[0] & 0x80 != 0)
        primitive(ASN1Tag.integer, content)
    }

    mutating func objectIdentifier(_ encodedArcs: [UInt8]) {
        primitive(ASN1Tag.objectIdentifier, encodedArcs)
    }

    mutating func null() {
        primitive(ASN1Tag.null, [])
    }

    /// `SEQUENCE { OID, NULL }`, the AlgorithmIdentifier of digest and RSA algorithms.
    mutating func algorithm(_ encodedArcs: [UInt8], nullParameters: Bool = true) {
        definite(ASN1Tag.sequence) { writer in
            writer.objectIdentifier(encodedArcs)
            if nullParameters { writer.null() }
        }
    }

    /// A DER `SET OF`: elements sorted by their encodings.
    mutating func setOf(_ encodedElements: [[UInt8]]) {
        let sorted = encodedElements.sorted { $0.lexicographicallyPrecedes($1) }
        primitive(ASN1Tag.set, sorted.joined())
    }

    private mutating func appendLength(_ length: Int) {
        if length < 0x80 {
            bytes.append(UInt8(length))
            return
        }
        var octets: [UInt8] = []
        var value = length
        while value > 0 {
            octets.insert(UInt8(value & 0xFF), at: 0)
            value >>= 8
        }
        bytes.append(0x80 | UInt8(octets.count))
        bytes.append(contentsOf: octets)
    }
}

/// Encoded object identifiers (contents octets) used by receipts.
enum ObjectIdentifierBytes {
    static let data: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01]
    static let signedData: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]
    static let sha1: [UInt8] = [0x2B, 0x0E, 0x03, 0x02, 0x1A]
    static let sha256: [UInt8] = [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01]
    static let sha384: [UInt8] = [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02]
    static let sha512: [UInt8] = [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03]
    static let rsaEncryption: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]
    static let sha1WithRSA: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x05]
    static let sha256WithRSA: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x0B]
    static let sha384WithRSA: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x0C]
    static let sha512WithRSA: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x0D]
    static let contentTypeAttribute: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x03]
    static let messageDigestAttribute: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x04]
    static let signingTimeAttribute: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x05]
}
