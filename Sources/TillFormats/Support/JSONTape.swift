/// A validated JSON document laid out as a flat tape of nodes, the input of ``TapeDecoder``.
///
/// One pass checks the whole text against RFC 8259 (no trailing commas, no leading zeros, escapes
/// and surrogates well formed, nesting limited) and records every value; objects hold their key and
/// value nodes in order, and every node knows where its next sibling starts. Duplicate keys in an
/// object are refused, so two readers can never disagree about a signed value.
struct JSONTape {
    enum Kind: UInt8 {
        case null, `true`, `false`, number, string, object, array
    }

    struct Node {
        var kind: Kind
        /// For strings, the contents between the quotes; for numbers, the digits; for containers, the brackets.
        var start: Int32
        var end: Int32
        /// The index of the node after this one and all its descendants.
        var next: Int32
        /// Strings: whether the contents hold backslash escapes. Containers: the number of members.
        var flag: Int32
        /// Strings used as keys: a cheap summary (length and two bytes) compared before the bytes.
        var fingerprint: UInt32
    }

    let bytes: [UInt8]
    private(set) var nodes: [Node] = []

    init(_ bytes: [UInt8], maximumDepth: Int = 64) throws(JSONTapeError) {
        guard bytes.count < Int(Int32.max) else { throw .tooLarge }
        self.bytes = bytes
        nodes.reserveCapacity(bytes.count / 12 + 4)
        var position = skipWhitespace(0)
        position = try parseValue(at: position, depth: 0, maximumDepth: maximumDepth)
        guard skipWhitespace(position) == bytes.count else { throw .syntax(position) }
    }

    private func skipWhitespace(_ start: Int) -> Int {
        var i = start
        while i < bytes.count {
            switch bytes[i] {
            case 0x20, 0x09, 0x0A, 0x0D: i += 1
            default: return i
            }
        }
        return i
    }

    private mutating func append(_ kind: Kind, _ start: Int, _ end: Int, flag: Int32 = 0, fingerprint: UInt32 = 0)
        -> Int
    {
        nodes.append(
            Node(
                kind: kind,
                start: Int32(start),
                end: Int32(end),
                next: Int32(nodes.count + 1),
                flag: flag,
                fingerprint: fingerprint
            )
        )
        return nodes.count - 1
    }

    /// Parses the value at `i` (no leading whitespace) and returns the position after it.
    private mutating func parseValue(at i: Int, depth: Int, maximumDepth: Int) throws(JSONTapeError) -> Int {
        guard i < bytes.count else { throw .syntax(i) }
        switch bytes[i] {
        case UInt8(ascii: "{"): return try parseObject(at: i, depth: depth + 1, maximumDepth: maximumDepth)
        case UInt8(ascii: "["): return try parseArray(at: i, depth: depth + 1, maximumDepth: maximumDepth)
        case UInt8(ascii: "\""):
            let (end, escaped) = try scanString(at: i)
            _ = append(.string, i + 1, end - 1, flag: escaped ? 1 : 0, fingerprint: fingerprint(i + 1, end - 1))
            return end
        case UInt8(ascii: "t"): return try literal("true", .true, at: i)
        case UInt8(ascii: "f"): return try literal("false", .false, at: i)
        case UInt8(ascii: "n"): return try literal("null", .null, at: i)
        default:
            let end = try scanNumber(at: i)
            _ = append(.number, i, end)
            return end
        }
    }

    private mutating func literal(_ word: StaticString, _ kind: Kind, at i: Int) throws(JSONTapeError) -> Int {
        let count = word.utf8CodeUnitCount
        guard i + count <= bytes.count else { throw .syntax(i) }
        for k in 0..<count where bytes[i + k] != word.utf8Start[k] { throw .syntax(i + k) }
        _ = append(kind, i, i + count)
        return i + count
    }

    private mutating func parseObject(at start: Int, depth: Int, maximumDepth: Int) throws(JSONTapeError) -> Int {
        guard depth <= maximumDepth else { throw .tooDeep }
        let index = append(.object, start, start)
        var i = skipWhitespace(start + 1)
        var members: Int32 = 0
        var seen: Set<String>?  // for large objects, instead of comparing every pair of keys
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
            i += 1
        } else {
            while true {
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw .syntax(i) }
                let keyIndex = nodes.count
                i = try parseValue(at: i, depth: depth, maximumDepth: maximumDepth)
                if members == 32 {
                    var keys = Set<String>()
                    var k = index + 1
                    while k < keyIndex {
                        keys.insert(string(at: k))
                        k = Int(nodes[k + 1].next)
                    }
                    seen = keys
                }
                if seen != nil {
                    guard seen!.insert(string(at: keyIndex)).inserted else { throw .duplicateKey(string(at: keyIndex)) }
                } else {
                    try checkUnique(keyIndex, in: index)
                }
                i = skipWhitespace(i)
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw .syntax(i) }
                i = try parseValue(at: skipWhitespace(i + 1), depth: depth, maximumDepth: maximumDepth)
                members += 1
                i = skipWhitespace(i)
                if try afterMember(&i, closedBy: UInt8(ascii: "}")) { break }
            }
        }
        return close(index, at: i, members: members)
    }

    private mutating func parseArray(at start: Int, depth: Int, maximumDepth: Int) throws(JSONTapeError) -> Int {
        guard depth <= maximumDepth else { throw .tooDeep }
        let index = append(.array, start, start)
        var i = skipWhitespace(start + 1)
        var members: Int32 = 0
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
            i += 1
        } else {
            while true {
                // Two statements, not `skipWhitespace(try parseValue(…))`: that call holds a copy of `self` (and so a
                // second reference to `nodes`) while the element is parsed, and every element's first append then
                // copied the whole tape. Found by the app-api target: 64 KiB of small nested arrays took a minute.
                let end = try parseValue(at: i, depth: depth, maximumDepth: maximumDepth)
                i = skipWhitespace(end)
                members += 1
                if try afterMember(&i, closedBy: UInt8(ascii: "]")) { break }
            }
        }
        return close(index, at: i, members: members)
    }

    /// After a member of an object or an array, at `i` (white space skipped): past a comma and the white space after
    /// it, false (another member follows); past `closer`, true. Anything else is a syntax error.
    @inline(__always)
    private func afterMember(_ i: inout Int, closedBy closer: UInt8) throws(JSONTapeError) -> Bool {
        guard i < bytes.count else { throw .syntax(i) }
        if bytes[i] == UInt8(ascii: ",") {
            i = skipWhitespace(i + 1)
            return false
        }
        guard bytes[i] == closer else { throw .syntax(i) }
        i += 1
        return true
    }

    /// Ends the node of an object or an array at `end`, with its count of members; answers `end`.
    private mutating func close(_ index: Int, at end: Int, members: Int32) -> Int {
        nodes[index].end = Int32(end)
        nodes[index].next = Int32(nodes.count)
        nodes[index].flag = members
        return end
    }

    /// Refuses a key already present in the object (compares decoded text when escapes are involved).
    private func checkUnique(_ keyIndex: Int, in object: Int) throws(JSONTapeError) {
        let key = nodes[keyIndex]
        var k = object + 1
        while k < keyIndex {
            let other = nodes[k]
            if other.fingerprint == key.fingerprint || other.flag != 0 || key.flag != 0 {
                if string(at: k) == string(at: keyIndex) { throw .duplicateKey(string(at: keyIndex)) }
            }
            k = Int(nodes[k + 1].next)
        }
    }

    private func fingerprint(_ start: Int, _ end: Int) -> UInt32 {
        Self.fingerprint(
            count: end - start,
            first: start < end ? bytes[start] : 0,
            last: start < end ? bytes[end - 1] : 0
        )
    }

    static func fingerprint(count: Int, first: UInt8, last: UInt8) -> UInt32 {
        UInt32(truncatingIfNeeded: count) << 16 | UInt32(first) << 8 | UInt32(last)
    }

    /// Scans the string starting at the quote `i`; returns the position after the closing quote.
    private func scanString(at i: Int) throws(JSONTapeError) -> (end: Int, escaped: Bool) {
        var k = i + 1
        var escaped = false
        while k < bytes.count {
            let c = bytes[k]
            if c == UInt8(ascii: "\"") { return (k + 1, escaped) }
            if c < 0x20 { throw .syntax(k) }
            if c == UInt8(ascii: "\\") {
                escaped = true
                guard k + 1 < bytes.count else { throw .syntax(k) }
                switch bytes[k + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    k += 2
                case UInt8(ascii: "u"):
                    guard k + 6 <= bytes.count, (k + 2..<k + 6).allSatisfy({ Self.hexValue(bytes[$0]) != nil }) else {
                        throw .syntax(k)
                    }
                    k += 6
                default: throw .syntax(k)
                }
                continue
            }
            k += 1
        }
        throw .syntax(i)
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    private func scanNumber(at i: Int) throws(JSONTapeError) -> Int {
        var k = i
        func digits() -> Int {
            let from = k
            while k < bytes.count, bytes[k] >= 0x30, bytes[k] <= 0x39 { k += 1 }
            return k - from
        }
        if k < bytes.count, bytes[k] == UInt8(ascii: "-") { k += 1 }
        guard k < bytes.count else { throw .syntax(k) }
        if bytes[k] == UInt8(ascii: "0") {
            k += 1
        } else if digits() == 0 {
            throw .syntax(k)
        }
        if k < bytes.count, bytes[k] == UInt8(ascii: ".") {
            k += 1
            guard digits() > 0 else { throw .syntax(k) }
        }
        if k < bytes.count, bytes[k] == UInt8(ascii: "e") || bytes[k] == UInt8(ascii: "E") {
            k += 1
            if k < bytes.count, bytes[k] == UInt8(ascii: "+") || bytes[k] == UInt8(ascii: "-") { k += 1 }
            guard digits() > 0 else { throw .syntax(k) }
        }
        return k
    }

    static func hexValue(_ c: UInt8) -> UInt32? {
        switch c {
        case 0x30...0x39: UInt32(c - 0x30)
        case 0x41...0x46: UInt32(c - 0x41 + 10)
        case 0x61...0x66: UInt32(c - 0x61 + 10)
        default: nil
        }
    }

    /// The text of the string node at `index`, escapes resolved (invalid surrogates become U+FFFD).
    ///
    /// The resolved text is gathered as UTF-8 bytes and made a `String` once: a receipt's base64 with its slashes
    /// escaped (`\/`, as Foundation's encoder writes them) has a hundred escapes in 5 KB, and appending scalar by
    /// scalar cost 5% of a purchase's CPU (measured with perf at 1,000 submissions a second).
    func string(at index: Int) -> String {
        let node = nodes[index]
        let range = Int(node.start)..<Int(node.end)
        if node.flag == 0 { return String(decoding: bytes[range], as: UTF8.self) }
        var utf8: [UInt8] = []
        utf8.reserveCapacity(range.count)
        var k = range.lowerBound
        while k < range.upperBound {
            let c = bytes[k]
            guard c == UInt8(ascii: "\\") else {
                utf8.append(c)
                k += 1
                continue
            }
            let e = bytes[k + 1]
            k += 2
            switch e {
            case UInt8(ascii: "b"): utf8.append(0x08)
            case UInt8(ascii: "f"): utf8.append(0x0C)
            case UInt8(ascii: "n"): utf8.append(0x0A)
            case UInt8(ascii: "r"): utf8.append(0x0D)
            case UInt8(ascii: "t"): utf8.append(0x09)
            case UInt8(ascii: "u"):
                var unit = hex4(k)
                k += 4
                if (0xD800..<0xDC00).contains(unit), k + 6 <= range.upperBound, bytes[k] == UInt8(ascii: "\\"),
                    bytes[k + 1] == UInt8(ascii: "u")
                {
                    let low = hex4(k + 2)
                    if (0xDC00..<0xE000).contains(low) {
                        unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                        k += 6
                    }
                }
                utf8.append(contentsOf: UTF8.encode(Unicode.Scalar(unit) ?? "\u{FFFD}")!)
            default: utf8.append(e)
            }
        }
        return String(decoding: utf8, as: UTF8.self)
    }

    /// Whether the string node at `index` holds an escaped U+0000 (`\u0000`), read from its bytes without decoding
    /// it. A raw control character is a syntax error already, so this is the only way a string holds one.
    func holdsNull(at index: Int) -> Bool {
        let node = nodes[index]
        guard node.flag != 0 else { return false }
        var k = Int(node.start)
        let end = Int(node.end)
        while k < end {
            guard bytes[k] == UInt8(ascii: "\\") else {
                k += 1
                continue
            }
            if bytes[k + 1] == UInt8(ascii: "u") {
                if hex4(k + 2) == 0 { return true }
                k += 6
            } else {
                k += 2
            }
        }
        return false
    }

    private func hex4(_ k: Int) -> UInt32 {
        (k..<k + 4).reduce(0) { $0 << 4 | (Self.hexValue(bytes[$1]) ?? 0) }
    }

    /// Whether the string node at `index` equals `key` (compared as UTF-8 bytes).
    func string(at index: Int, equals key: String) -> Bool {
        let node = nodes[index]
        if node.flag != 0 { return string(at: index) == key }
        var key = key
        return key.withUTF8 { utf8 in
            guard utf8.count == Int(node.end - node.start) else { return false }
            var k = Int(node.start)
            for byte in utf8 {
                if bytes[k] != byte { return false }
                k += 1
            }
            return true
        }
    }
}

/// Why a JSON text was refused.
enum JSONTapeError: Error, Hashable, CustomStringConvertible {
    case syntax(Int)
    case tooDeep
    case tooLarge
    case duplicateKey(String)

    var description: String {
        switch self {
        case .syntax(let offset): "invalid JSON at byte \(offset)"
        case .tooDeep: "JSON nested too deeply"
        case .tooLarge: "JSON too large"
        case .duplicateKey(let key): "duplicate key \"\(key)\""
        }
    }
}
