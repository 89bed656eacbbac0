/// A minimal forward reader of DER elements over raw memory, for the hot loop of receipt payloads
/// (hundreds of small attributes per receipt). Definite lengths only; every read is bounds-checked.
struct DERScanner {
    let base: UnsafeBufferPointer<UInt8>

    /// The header of the element at `offset`, whose end must not pass `limit`.
    @inline(__always)
    func header(at offset: Int, limit: Int) throws(ASN1Error) -> (tag: UInt8, contentStart: Int, contentEnd: Int) {
        guard offset + 2 <= limit else { throw .truncated }
        let tag = base[offset]
        let first = base[offset + 1]
        if first < 0x80 {
            let end = offset + 2 + Int(first)
            guard end <= limit else { throw .truncated }
            return (tag, offset + 2, end)
        }
        let count = Int(first & 0x7F)
        guard count >= 1, count <= 4, offset + 2 + count <= limit else { throw .invalidLength }
        var length = 0
        for i in 0..<count { length = length << 8 | Int(base[offset + 2 + i]) }
        let start = offset + 2 + count
        guard length <= limit - start else { throw .truncated }
        return (tag, start, start + length)
    }

    /// The element at `offset`, which must carry `tag`.
    @inline(__always)
    func expect(_ tag: UInt8, at offset: Int, limit: Int) throws(ASN1Error) -> (contentStart: Int, contentEnd: Int) {
        let h = try header(at: offset, limit: limit)
        guard h.tag == tag else { throw .unexpectedTag(expected: tag, found: h.tag) }
        return (h.contentStart, h.contentEnd)
    }

    /// A two's-complement INTEGER content of at most eight bytes.
    @inline(__always)
    func integer(_ start: Int, _ end: Int) throws(ASN1Error) -> Int64 {
        guard end > start, end - start <= 8 else { throw .integerOutOfRange }
        var value: Int64 = base[start] & 0x80 != 0 ? -1 : 0
        for i in start..<end { value = value << 8 | Int64(base[i]) }
        return value
    }

    /// `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }` at `offset`.
    @inline(__always)
    func attribute(at offset: Int, limit: Int) throws(ASN1Error) -> (
        type: Int, version: Int, value: Range<Int>, end: Int
    ) {
        let sequence = try expect(ASN1Tag.sequence, at: offset, limit: limit)
        let type = try expect(ASN1Tag.integer, at: sequence.contentStart, limit: sequence.contentEnd)
        let version = try expect(ASN1Tag.integer, at: type.contentEnd, limit: sequence.contentEnd)
        let value = try expect(ASN1Tag.octetString, at: version.contentEnd, limit: sequence.contentEnd)
        guard value.contentEnd == sequence.contentEnd else { throw .trailingData }
        let typeNumber = try integer(type.contentStart, type.contentEnd)
        let versionNumber = try integer(version.contentStart, version.contentEnd)
        // Not `abs(versionNumber)`: it traps on Int64.min, an eight-byte INTEGER anyone can write (found by fuzzing).
        guard typeNumber >= 0, typeNumber < 1 << 31, versionNumber > -(1 << 31), versionNumber < 1 << 31 else {
            throw .integerOutOfRange
        }
        return (Int(typeNumber), Int(versionNumber), value.contentStart..<value.contentEnd, sequence.contentEnd)
    }

    /// The single element filling an attribute value.
    @inline(__always)
    private func inner(_ value: Range<Int>, type: Int) throws(ASN1Error) -> (
        tag: UInt8, contentStart: Int, contentEnd: Int
    ) {
        guard let h = try? header(at: value.lowerBound, limit: value.upperBound), h.contentEnd == value.upperBound
        else {
            throw .invalidAttribute(type: type)
        }
        return h
    }

    /// A UTF8String, IA5String or PrintableString value; nil when empty.
    func string(_ value: Range<Int>, type: Int) throws(ASN1Error) -> String? {
        if value.isEmpty { return nil }
        let h = try inner(value, type: type)
        guard h.tag == ASN1Tag.utf8String || h.tag == ASN1Tag.ia5String || h.tag == ASN1Tag.printableString else {
            throw .invalidAttribute(type: type)
        }
        if h.contentStart == h.contentEnd { return nil }
        return String(decoding: UnsafeBufferPointer(rebasing: base[h.contentStart..<h.contentEnd]), as: UTF8.self)
    }

    /// An INTEGER value; nil when empty.
    func integer(_ value: Range<Int>, type: Int) throws(ASN1Error) -> Int64? {
        if value.isEmpty { return nil }
        let h = try inner(value, type: type)
        guard h.tag == ASN1Tag.integer, let number = try? integer(h.contentStart, h.contentEnd) else {
            throw .invalidAttribute(type: type)
        }
        return number
    }

    /// An RFC 3339 date in an IA5String (or UTF8String), as seconds since 1970; nil when empty.
    func dateSeconds(_ value: Range<Int>, type: Int) throws(ASN1Error) -> Int64? {
        if value.isEmpty { return nil }
        let h = try inner(value, type: type)
        guard h.tag == ASN1Tag.ia5String || h.tag == ASN1Tag.utf8String else { throw .invalidAttribute(type: type) }
        if h.contentStart == h.contentEnd { return nil }
        guard
            let seconds = ReceiptDate.parseRFC3339Seconds(
                bytes: UnsafeBufferPointer(rebasing: base[h.contentStart..<h.contentEnd])
            )
        else { throw .invalidAttribute(type: type) }
        return seconds
    }
}
