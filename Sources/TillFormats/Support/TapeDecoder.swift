import Foundation

/// A `Decoder` over a ``JSONTape`` with Apple's conventions: dates are epoch milliseconds (fractions
/// truncated), unknown keys are ignored.
///
/// It exists for speed: decoding a signed transaction with Foundation's JSONDecoder costs about as much
/// as a fifth of the ES256 signature check; over the tape it is a few microseconds.
struct TapeDecoder: Decoder {
    let tape: JSONTape
    let index: Int
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// Decodes a value from JSON bytes.
    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8], maximumDepth: Int = 64) throws -> T {
        let tape = try JSONTape(bytes, maximumDepth: maximumDepth)
        return try TapeDecoder(tape: tape, index: 0, codingPath: []).decodeValue(T.self)
    }

    var node: JSONTape.Node { tape.nodes[index] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard node.kind == .object else { throw mismatch([String: Any].self) }
        return KeyedDecodingContainer(TapeKeyedContainer<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard node.kind == .array else { throw mismatch([Any].self) }
        return TapeUnkeyedContainer(decoder: self)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func child(_ index: Int, key: any CodingKey) -> TapeDecoder {
        TapeDecoder(tape: tape, index: index, codingPath: codingPath + [key])
    }

    func mismatch(_ type: Any.Type) -> DecodingError {
        .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "found JSON \(node.kind)"))
    }

    /// Decodes `T`, handling dates as milliseconds.
    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == Date.self {
            let ms = try decodeMilliseconds()
            return Date(millisecondsSince1970: ms) as! T
        }
        return try T(from: self)
    }

    private func decodeMilliseconds() throws -> Int64 {
        if let whole = integer() {
            guard Date.acceptedMilliseconds.contains(whole) else { throw mismatch(Date.self) }
            return whole
        }
        let value = try decode(Double.self)
        guard value.isFinite, abs(value) < 1e17 else { throw mismatch(Date.self) }
        return Int64(value.rounded(.towardZero))
    }

    /// The number as a 64-bit integer, if it is written as one.
    func integer() -> Int64? {
        guard node.kind == .number else { return nil }
        var k = Int(node.start)
        let end = Int(node.end)
        let negative = tape.bytes[k] == UInt8(ascii: "-")
        if negative { k += 1 }
        var value: Int64 = 0
        while k < end {
            let c = tape.bytes[k]
            guard c >= 0x30, c <= 0x39 else { return nil }
            let (times, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times.addingReportingOverflow(Int64(c - 0x30))
            guard !o1, !o2 else { return nil }
            value = sum
            k += 1
        }
        return negative ? -value : value
    }
}

extension TapeDecoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool { node.kind == .null }

    func decode(_ type: Bool.Type) throws -> Bool {
        switch node.kind {
        case .true: return true
        case .false: return false
        default: throw mismatch(type)
        }
    }

    func decode(_ type: String.Type) throws -> String {
        guard node.kind == .string else { throw mismatch(type) }
        return tape.string(at: index)
    }

    func decode(_ type: Double.Type) throws -> Double {
        guard node.kind == .number else { throw mismatch(type) }
        if let whole = integer(), abs(whole) < 1 << 53 { return Double(whole) }
        let text = String(decoding: tape.bytes[Int(node.start)..<Int(node.end)], as: UTF8.self)
        guard let value = Double(text) else { throw mismatch(type) }
        return value
    }

    func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }

    /// An integer, also from an integral number written with a fraction or exponent (`1.0`, `1e3`), as
    /// Foundation's JSONDecoder (and so Apple's library) accepts.
    func decodeInteger<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        if let whole = integer() {
            guard let value = I(exactly: whole) else { throw mismatch(type) }
            return value
        }
        let double = try decode(Double.self)
        guard double.rounded(.towardZero) == double, abs(double) < 9e15, let value = I(exactly: double) else {
            throw mismatch(type)
        }
        return value
    }

    func decode(_ type: Int.Type) throws -> Int { try decodeInteger(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decodeInteger(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decodeInteger(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decodeInteger(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decodeInteger(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try decodeInteger(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeInteger(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeInteger(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeInteger(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeInteger(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeValue(type) }
}

/// An object's members; keys are found by fingerprint (binary search), then compared byte for byte.
struct TapeKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: TapeDecoder
    /// (fingerprint, key node index) of every member, sorted by fingerprint; escaped keys are kept apart.
    private let index: [(fingerprint: UInt32, node: Int)]
    private let escapedKeys: [Int]
    var codingPath: [any CodingKey] { decoder.codingPath }

    init(decoder: TapeDecoder) {
        self.decoder = decoder
        var index: [(fingerprint: UInt32, node: Int)] = []
        var escaped: [Int] = []
        index.reserveCapacity(Int(decoder.node.flag))
        let nodes = decoder.tape.nodes
        var k = decoder.index + 1
        let end = Int(nodes[decoder.index].next)
        while k < end {
            if nodes[k].flag != 0 { escaped.append(k) } else { index.append((nodes[k].fingerprint, k)) }
            k = Int(nodes[k + 1].next)
        }
        index.sort { $0.fingerprint < $1.fingerprint }
        self.index = index
        self.escapedKeys = escaped
    }

    /// The index of the value for `key`, if present.
    private func valueIndex(_ key: Key) -> Int? {
        var name = key.stringValue
        let fingerprint = name.withUTF8 { utf8 in
            JSONTape.fingerprint(count: utf8.count, first: utf8.first ?? 0, last: utf8.last ?? 0)
        }
        var low = 0
        var high = index.count
        while low < high {
            let middle = (low + high) / 2
            if index[middle].fingerprint < fingerprint { low = middle + 1 } else { high = middle }
        }
        while low < index.count, index[low].fingerprint == fingerprint {
            if decoder.tape.string(at: index[low].node, equals: name) { return index[low].node + 1 }
            low += 1
        }
        for node in escapedKeys where decoder.tape.string(at: node, equals: name) { return node + 1 }
        return nil
    }

    private func value(_ key: Key) throws -> TapeDecoder {
        guard let index = valueIndex(key) else {
            throw DecodingError.keyNotFound(
                key,
                .init(codingPath: codingPath, debugDescription: "no \"\(key.stringValue)\"")
            )
        }
        return decoder.child(index, key: key)
    }

    var allKeys: [Key] {
        var keys: [Key] = []
        var k = decoder.index + 1
        let end = Int(decoder.tape.nodes[decoder.index].next)
        while k < end {
            if let key = Key(stringValue: decoder.tape.string(at: k)) { keys.append(key) }
            k = Int(decoder.tape.nodes[k + 1].next)
        }
        return keys
    }

    func contains(_ key: Key) -> Bool { valueIndex(key) != nil }

    func decodeNil(forKey key: Key) throws -> Bool { try value(key).decodeNil() }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try value(key).decodeValue(type) }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let index = valueIndex(key) else { return nil }
        let child = decoder.child(index, key: key)
        return child.decodeNil() ? nil : try child.decodeValue(type)
    }

    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        guard let index = valueIndex(key) else { return nil }
        switch decoder.tape.nodes[index].kind {
        case .null: return nil
        case .string: return decoder.tape.string(at: index)
        default: throw decoder.child(index, key: key).mismatch(type)
        }
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type,
        forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try value(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try value(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { decoder }
    func superDecoder(forKey key: Key) throws -> any Decoder { try value(key) }
}

/// An array's elements, in order.
struct TapeUnkeyedContainer: UnkeyedDecodingContainer {
    let decoder: TapeDecoder
    private var position: Int
    private(set) var currentIndex = 0

    init(decoder: TapeDecoder) {
        self.decoder = decoder
        self.position = decoder.index + 1
    }

    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { Int(decoder.node.flag) }
    var isAtEnd: Bool { currentIndex >= Int(decoder.node.flag) }

    private struct IndexKey: CodingKey {
        var intValue: Int?
        var stringValue: String { String(intValue ?? 0) }
        init(intValue: Int) { self.intValue = intValue }
        init?(stringValue: String) { nil }
    }

    private mutating func next() throws -> TapeDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "end of array"))
        }
        let child = decoder.child(position, key: IndexKey(intValue: currentIndex))
        position = Int(decoder.tape.nodes[position].next)
        currentIndex += 1
        return child
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, decoder.tape.nodes[position].kind == .null else { return false }
        _ = try next()
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decodeValue(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<
        NestedKey
    > {
        try next().container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
    mutating func superDecoder() throws -> any Decoder { try next() }
}
