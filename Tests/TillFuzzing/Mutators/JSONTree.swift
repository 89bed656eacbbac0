import Foundation

/// A JSON text as a tree that keeps every scalar's token as written (numbers not reparsed, strings not unescaped),
/// so that it can be written back byte for byte, with other whitespace, or with members in another order, and
/// mutated a value at a time.
///
/// Lenient where a mutator can afford it (it only needs to find the structure); the parsers under test are the
/// strict ones.
public indirect enum JSONTree: Sendable, Hashable {
    /// A number, string (quotes included), `true`, `false` or `null`, as written.
    case scalar([UInt8])
    case array([JSONTree])
    /// Members in order; each key is a string token, quotes included.
    case object([Member])

    public struct Member: Sendable, Hashable {
        public var key: [UInt8]
        public var value: JSONTree

        public init(key: [UInt8], value: JSONTree) {
            self.key = key
            self.value = value
        }
    }

    // MARK: Reading

    /// Parses a whole text (nil when it is not JSON, or nests deeper than 512 levels).
    public static func parse(_ bytes: some Collection<UInt8>) -> JSONTree? {
        var parser = Parser(bytes: Array(bytes))
        guard let value = parser.value(depth: 0) else { return nil }
        parser.skipWhitespace()
        return parser.index == parser.bytes.count ? value : nil
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func skipWhitespace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func value(depth: Int) -> JSONTree? {
            skipWhitespace()
            guard index < bytes.count, depth < 512 else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                var members: [Member] = []
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return .object(members)
                }
                while true {
                    skipWhitespace()
                    guard let key = string() else { return nil }
                    skipWhitespace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                    index += 1
                    guard let value = value(depth: depth + 1) else { return nil }
                    members.append(Member(key: key, value: value))
                    skipWhitespace()
                    guard index < bytes.count else { return nil }
                    if bytes[index] == UInt8(ascii: ",") {
                        index += 1
                        continue
                    }
                    guard bytes[index] == UInt8(ascii: "}") else { return nil }
                    index += 1
                    return .object(members)
                }
            case UInt8(ascii: "["):
                index += 1
                var elements: [JSONTree] = []
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return .array(elements)
                }
                while true {
                    guard let element = value(depth: depth + 1) else { return nil }
                    elements.append(element)
                    skipWhitespace()
                    guard index < bytes.count else { return nil }
                    if bytes[index] == UInt8(ascii: ",") {
                        index += 1
                        continue
                    }
                    guard bytes[index] == UInt8(ascii: "]") else { return nil }
                    index += 1
                    return .array(elements)
                }
            case UInt8(ascii: "\""):
                return string().map(JSONTree.scalar)
            default:
                let start = index
                while index < bytes.count,
                    !([0x20, 0x09, 0x0A, 0x0D] + Array(",]}:".utf8)).contains(bytes[index])
                {
                    index += 1
                }
                return index > start ? .scalar(Array(bytes[start..<index])) : nil
            }
        }

        /// A string token, quotes included.
        mutating func string() -> [UInt8]? {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
            let start = index
            index += 1
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\\"): index += 2
                case UInt8(ascii: "\""):
                    index += 1
                    return Array(bytes[start..<index])
                default: index += 1
                }
            }
            return nil
        }
    }

    // MARK: Writing

    /// The text, compact.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        write(to: &out, spacing: nil, reversed: false)
        return out
    }

    /// The same document written differently where JSON does not care: whitespace between every token (chosen by
    /// `random`), and, when `reversed`, every object's members in the opposite order.
    public func reformatted(_ random: inout FuzzRandom, reversed: Bool) -> [UInt8] {
        var out: [UInt8] = []
        withUnsafeMutablePointer(to: &random) { write(to: &out, spacing: $0, reversed: reversed) }
        return out
    }

    private func write(to out: inout [UInt8], spacing random: UnsafeMutablePointer<FuzzRandom>?, reversed: Bool) {
        func space() {
            guard let random else { return }
            for _ in 0..<random.pointee.int(0...2) { out.append(random.pointee.element(of: [0x20, 0x09, 0x0A, 0x0D])) }
        }
        switch self {
        case .scalar(let token): out.append(contentsOf: token)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                space()
                element.write(to: &out, spacing: random, reversed: reversed)
                space()
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, member) in (reversed ? members.reversed() : members).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                space()
                out.append(contentsOf: member.key)
                space()
                out.append(UInt8(ascii: ":"))
                space()
                member.value.write(to: &out, spacing: random, reversed: reversed)
                space()
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    // MARK: Reading values

    /// The value of `key` (written without escapes) in an object.
    public subscript(key: String) -> JSONTree? {
        guard case .object(let members) = self else { return nil }
        let token = Array("\"\(key)\"".utf8)
        return members.last(where: { $0.key == token })?.value
    }

    /// A string's contents when it has no escapes.
    public var plainString: String? {
        guard case .scalar(let token) = self, token.count >= 2, token.first == UInt8(ascii: "\""),
            !token.contains(UInt8(ascii: "\\"))
        else { return nil }
        return String(decoding: token.dropFirst().dropLast(), as: UTF8.self)
    }

    /// A string token for `text` (quotes and the escapes JSON requires added).
    public static func string(_ text: String) -> JSONTree {
        var out: [UInt8] = [UInt8(ascii: "\"")]
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), byte]
            case 0..<0x20: out += Array(String(format: "\\u%04x", byte).utf8)
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
        return .scalar(out)
    }

    /// Whether any object holds the same key twice, however spelled (`"bundleId"` and `"bundle\u0049d"` are one
    /// key): then member order may matter to a reader.
    public var hasDuplicateKeys: Bool {
        switch self {
        case .scalar: false
        case .array(let elements): elements.contains(where: \.hasDuplicateKeys)
        case .object(let members):
            Set(members.map { Self.text(ofKey: $0.key) }).count != members.count
                || members.contains(where: \.value.hasDuplicateKeys)
        }
    }

    /// A key token's text, escapes resolved (the token itself when it does not read as a string).
    static func text(ofKey token: [UInt8]) -> String {
        guard token.contains(UInt8(ascii: "\\")),
            let text = try? JSONSerialization.jsonObject(with: Data(token), options: .fragmentsAllowed) as? String
        else { return String(decoding: token.dropFirst().dropLast(), as: UTF8.self) }
        return text
    }

    /// The children of an array or object, in order.
    var children: [JSONTree] {
        switch self {
        case .scalar: []
        case .array(let elements): elements
        case .object(let members): members.map(\.value)
        }
    }

    /// How many values the tree holds, this one included.
    var count: Int { 1 + children.reduce(0) { $0 + $1.count } }

    /// The path (child indices) of a node picked uniformly: the `index`-th in pre-order. Found in one walk that
    /// notes each node's parent, not by listing every path, which costs the square of the depth on the deeply
    /// nested inputs the mutators make.
    func path(ofValueAt index: Int) -> [Int] {
        var parents: [(parent: Int, position: Int)] = []
        func visit(_ node: JSONTree, parent: Int, position: Int) {
            guard parents.count <= index else { return }
            let me = parents.count
            parents.append((parent, position))
            for (position, child) in node.children.enumerated() { visit(child, parent: me, position: position) }
        }
        visit(self, parent: -1, position: 0)
        var path: [Int] = []
        var at = min(index, parents.count - 1)
        while at > 0 {
            path.append(parents[at].position)
            at = parents[at].parent
        }
        return path.reversed()
    }

    func randomPath(_ random: inout FuzzRandom) -> [Int] {
        path(ofValueAt: random.int(0...count - 1))
    }

    subscript(path path: [Int]) -> JSONTree {
        get { self[path: path[...]] }
        set { self[path: path[...]] = newValue }
    }

    subscript(path path: ArraySlice<Int>) -> JSONTree {
        get {
            guard let first = path.first else { return self }
            switch self {
            case .scalar: return self
            case .array(let elements): return elements[first][path: path.dropFirst()]
            case .object(let members): return members[first].value[path: path.dropFirst()]
            }
        }
        set {
            guard let first = path.first else {
                self = newValue
                return
            }
            switch self {
            case .scalar: break
            case .array(var elements):
                self = .scalar([])  // the payload's only reference now: mutated in place, not copied
                elements[first][path: path.dropFirst()] = newValue
                self = .array(elements)
            case .object(var members):
                self = .scalar([])
                members[first].value[path: path.dropFirst()] = newValue
                self = .object(members)
            }
        }
    }
}

/// Mutations of a JSON document that keep it JSON (mostly): values replaced by boundary values of every type, keys
/// renamed to known or escaped spellings, members removed, repeated and reordered, strings mutated byte-wise, and
/// nested formats (a JWS in a string) handed to their own mutator.
public struct JSONMutator: Sendable {
    /// Keys worth trying: the fields of the formats under test.
    public var knownKeys: [String]
    /// A mutator for a string's contents that hold another format (a JWS, base64 DER); nil leaves them to bytes.
    public var nested: (@Sendable (String, inout FuzzRandom, ByteMutator) -> String?)?

    public init(
        knownKeys: [String] = [],
        nested: (@Sendable (String, inout FuzzRandom, ByteMutator) -> String?)? = nil
    ) {
        self.knownKeys = knownKeys
        self.nested = nested
    }

    static let interestingScalars: [String] = [
        "0", "-0", "1", "-1", "1.0", "1.5", "1e3", "1E+2", "-1e-7", "1e400", "-1e400", "4294967296",
        "9007199254740993", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
        "-9223372036854775809", "18446744073709551616", "253402300799999", "253402300800000", "-62135596800001",
        "0.000001", "123456789012345678901234567890", "true", "false", "null", "\"\"", "\" \"", "\"0\"", "\"-1\"",
        "\"\\u0000\"", "\"\\ud800\"", "\"\\udc00\\ud800\"", "\"\\u00e9\"", "\"é\"", "\"\\\"\"", "\"a\\/b\"",
        "\"Sandbox\"", "\"Production\"", "\"Xcode\"", "\"LocalTesting\"", "\"com.example.till\"", "\"%2F\"",
        "\"../../etc\"", "\"2026-01-01\"", "\"2026-01-01T00:00:00Z\"", "\"9999-12-31T23:59:59Z\"", "[]", "{}",
        "[null]", "{\"\":null}",
    ]

    /// Mutates `bytes` as JSON; text that is not JSON falls back to the byte mutator.
    public func mutate(_ bytes: [UInt8], _ random: inout FuzzRandom, _ byteMutator: ByteMutator) -> [UInt8] {
        guard var tree = JSONTree.parse(bytes) else {
            var copy = bytes
            byteMutator(&copy, maximumLength: bytes.count + 256)
            return copy
        }
        for _ in 0..<random.int(1...3) { mutate(&tree, &random, byteMutator) }
        return tree.bytes
    }

    public func mutate(_ tree: inout JSONTree, _ random: inout FuzzRandom, _ byteMutator: ByteMutator) {
        let path = tree.randomPath(&random)
        var node = tree[path: path]
        switch random.int(0...9) {
        case 0, 1:
            node = .scalar(Array(random.element(of: Self.interestingScalars).utf8))
        case 2:
            // A string's contents through libFuzzer's byte mutations, or a nested format's own mutator.
            if case .scalar(var token) = node, token.first == UInt8(ascii: "\""), token.count >= 2 {
                if let nested, let text = node.plainString, let mutated = nested(text, &random, byteMutator) {
                    node = JSONTree.string(mutated)
                } else {
                    var inner = Array(token.dropFirst().dropLast())
                    byteMutator(&inner, maximumLength: inner.count + 64)
                    token = [UInt8(ascii: "\"")] + inner + [UInt8(ascii: "\"")]
                    node = .scalar(token)
                }
            } else if case .scalar(var token) = node {
                byteMutator(&token, maximumLength: token.count + 16)
                node = .scalar(token.isEmpty ? Array("0".utf8) : token)
            }
        case 3:
            // Another value of the document in this place.
            node = tree[path: tree.randomPath(&random)]
        case 4:
            // Deeper nesting.
            let depth = random.element(of: [2, 16, 70, 300, 1_000])
            node =
                random.chance(1, in: 2)
                ? Self.nested(node, depth: depth, array: true) : Self.nested(node, depth: depth, array: false)
        case 5:
            // A longer value: a long string, or an array repeating this one.
            if random.chance(1, in: 2) {
                node = .scalar(
                    Array(("\"" + String(repeating: "x", count: random.element(of: [256, 4_096, 70_000])) + "\"").utf8)
                )
            } else {
                // No more than the 64 KiB an input may have: repeated repetitions would otherwise grow without bound.
                let most = max(1, 65_536 / max(1, node.bytes.count))
                node = .array(Array(repeating: node, count: min(most, random.element(of: [2, 33, 300]))))
            }
        default:
            // Members and elements: rename, remove, repeat, reorder.
            switch node {
            case .object(var members) where !members.isEmpty:
                let index = random.int(0...members.count - 1)
                switch random.int(0...4) {
                case 0:
                    let name = knownKeys.isEmpty ? "x" : random.element(of: knownKeys)
                    members[index].key = JSONTree.string(name).bytes
                case 1:
                    // The same key spelled with an escape: `bundleId` as `bundle\u0049d`.
                    var key = members[index].key
                    if key.count > 3 {
                        let at = random.int(1...key.count - 2)
                        let escaped = Array(String(format: "\\u%04x", key[at]).utf8)
                        key.replaceSubrange(at...at, with: escaped)
                        members[index].key = key
                    }
                case 2: members.remove(at: index)
                case 3: members.insert(members[index], at: random.int(0...members.count))
                default: members.swapAt(index, random.int(0...members.count - 1))
                }
                node = .object(members)
            case .object:
                let name = knownKeys.isEmpty ? "x" : random.element(of: knownKeys)
                node = .object([.init(key: JSONTree.string(name).bytes, value: .scalar(Array("1".utf8)))])
            case .array(var elements) where !elements.isEmpty:
                let index = random.int(0...elements.count - 1)
                switch random.int(0...2) {
                case 0: elements.remove(at: index)
                case 1: elements.insert(elements[index], at: random.int(0...elements.count))
                default: elements.swapAt(index, random.int(0...elements.count - 1))
                }
                node = .array(elements)
            default:
                node = .scalar(Array(random.element(of: Self.interestingScalars).utf8))
            }
        }
        tree[path: path] = node
    }

    static func nested(_ value: JSONTree, depth: Int, array: Bool) -> JSONTree {
        var node = value
        for _ in 0..<depth {
            node = array ? .array([node]) : .object([.init(key: Array("\"a\"".utf8), value: node)])
        }
        return node
    }
}
