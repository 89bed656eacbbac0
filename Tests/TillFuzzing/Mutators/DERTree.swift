/// BER/DER bytes as a tree of tag-length-value nodes that remembers each node's original bytes, so that a mutation
/// deep inside (an attribute inside the receipt payload inside the CMS content) is written back with every enclosing
/// length recomputed, while everything it did not touch keeps its bytes exactly (certificates, signed attributes).
///
/// Written for the fuzzer and kept apart from TillFormats' reader on purpose: a mutator that shared the parser's code
/// would share its blind spots.
public struct DERNode: Sendable, Hashable {
    public enum LengthForm: Sendable, Hashable {
        /// The shortest definite length (DER).
        case minimal
        /// Definite, in the long form with this many length bytes (BER allows it, DER does not).
        case long(Int)
        /// Indefinite, closed by an end-of-contents marker (BER, constructed only).
        case indefinite
    }

    public var tag: UInt8
    public var form: LengthForm
    /// The children of a constructed node (tag bit 6 set); nil for a primitive one.
    public var children: [DERNode]?
    /// The contents of a primitive node.
    public var content: [UInt8]
    /// The node's bytes as read, while nothing in it has changed.
    var original: [UInt8]?

    public init(tag: UInt8, content: [UInt8], form: LengthForm = .minimal) {
        self.tag = tag
        self.form = form
        self.children = nil
        self.content = content
    }

    public init(tag: UInt8, children: [DERNode], form: LengthForm = .minimal) {
        self.tag = tag
        self.form = form
        self.children = children
        self.content = []
    }

    public var isConstructed: Bool { children != nil }

    /// Parses `bytes` as exactly one element (nil when they are not, or nest deeper than 64 levels or hold more
    /// than 20,000 elements).
    public static func parse(_ bytes: some Collection<UInt8>) -> DERNode? {
        let array = Array(bytes)
        var budget = 20_000
        guard let (node, end) = parse(array, at: 0, limit: array.count, depth: 0, budget: &budget), end == array.count
        else { return nil }
        return node
    }

    private static func parse(_ bytes: [UInt8], at start: Int, limit: Int, depth: Int, budget: inout Int) -> (
        DERNode, Int
    )? {
        budget -= 1
        guard budget > 0, depth <= 64, start + 2 <= limit else { return nil }
        let tag = bytes[start]
        guard tag & 0x1F != 0x1F else { return nil }
        let constructed = tag & 0x20 != 0
        let first = bytes[start + 1]
        var cursor = start + 2
        var form = LengthForm.minimal
        var contentEnd: Int?
        if first == 0x80 {
            guard constructed else { return nil }
            form = .indefinite
        } else if first > 0x80 {
            let count = Int(first & 0x7F)
            guard count <= 4, cursor + count <= limit else { return nil }
            var length = 0
            for _ in 0..<count {
                length = length << 8 | Int(bytes[cursor])
                cursor += 1
            }
            guard length <= limit - cursor else { return nil }
            contentEnd = cursor + length
            if count != minimalLengthBytes(length) { form = .long(count) }
        } else {
            guard cursor + Int(first) <= limit else { return nil }
            contentEnd = cursor + Int(first)
        }
        var node: DERNode
        var end: Int
        if constructed {
            var children: [DERNode] = []
            var offset = cursor
            if let contentEnd {
                while offset < contentEnd {
                    guard
                        let (child, next) = parse(
                            bytes,
                            at: offset,
                            limit: contentEnd,
                            depth: depth + 1,
                            budget: &budget
                        )
                    else { return nil }
                    children.append(child)
                    offset = next
                }
                end = contentEnd
            } else {
                while true {
                    guard offset + 2 <= limit else { return nil }
                    if bytes[offset] == 0, bytes[offset + 1] == 0 {
                        end = offset + 2
                        break
                    }
                    guard let (child, next) = parse(bytes, at: offset, limit: limit, depth: depth + 1, budget: &budget)
                    else { return nil }
                    children.append(child)
                    offset = next
                }
            }
            node = DERNode(tag: tag, children: children, form: form)
        } else {
            guard let contentEnd else { return nil }
            node = DERNode(tag: tag, content: Array(bytes[cursor..<contentEnd]), form: form)
            end = contentEnd
        }
        node.original = Array(bytes[start..<end])
        return (node, end)
    }

    /// The node's bytes: as read where unchanged, re-encoded where changed.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        write(to: &out)
        return out
    }

    public func write(to out: inout [UInt8]) {
        if let original {
            out.append(contentsOf: original)
            return
        }
        out.append(tag)
        if let children, form == .indefinite {
            out.append(0x80)
            for child in children { child.write(to: &out) }
            out.append(contentsOf: [0, 0])
            return
        }
        var body: [UInt8] = []
        if let children {
            for child in children { child.write(to: &body) }
        } else {
            body = content
        }
        Self.writeLength(body.count, form: form, to: &out)
        out.append(contentsOf: body)
    }

    private static func writeLength(_ length: Int, form: LengthForm, to out: inout [UInt8]) {
        var count = minimalLengthBytes(length)
        if case .long(let wanted) = form { count = max(count, min(wanted, 4)) }
        if count == 0 {
            out.append(UInt8(length))
            return
        }
        out.append(0x80 | UInt8(count))
        for index in stride(from: count - 1, through: 0, by: -1) {
            out.append(UInt8(truncatingIfNeeded: length >> (8 * index)))
        }
    }

    /// Length bytes the long form needs (0: the short form does).
    private static func minimalLengthBytes(_ length: Int) -> Int {
        if length < 0x80 { return 0 }
        var count = 0
        var rest = length
        while rest > 0 {
            count += 1
            rest >>= 8
        }
        return count
    }

    // MARK: Paths

    /// How many nodes the tree holds, this one included.
    public var count: Int { 1 + (children ?? []).reduce(0) { $0 + $1.count } }

    /// The path (child indices) of a node picked uniformly: the `index`-th in pre-order. Found in one walk that
    /// notes each node's parent, not by listing every path, which costs the square of the depth on the deeply
    /// nested inputs the mutators make.
    public func path(ofNodeAt index: Int) -> [Int] {
        var parents: [(parent: Int, position: Int)] = []
        func visit(_ node: DERNode, parent: Int, position: Int) {
            guard parents.count <= index else { return }
            let me = parents.count
            parents.append((parent, position))
            for (position, child) in (node.children ?? []).enumerated() { visit(child, parent: me, position: position) }
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

    public func randomPath(_ random: inout FuzzRandom) -> [Int] {
        path(ofNodeAt: random.int(0...count - 1))
    }

    public subscript(path: [Int]) -> DERNode {
        get { self[path[...]] }
        set { self[path[...]] = newValue }
    }

    subscript(path: ArraySlice<Int>) -> DERNode {
        get {
            var node = self
            for index in path { node = node.children![index] }
            return node
        }
        set {
            guard let first = path.first else {
                self = newValue
                return
            }
            original = nil
            var child = children![first]
            children![first] = DERNode(tag: 0, content: [])  // `child` is now the only reference: no copy below
            child[path.dropFirst()] = newValue
            children![first] = child
        }
    }

    /// Marks the node changed, so that it is re-encoded (its form kept).
    public mutating func touch() { original = nil }
}

/// Mutations of a DER tree that keep it parseable: contents, tags, lengths and shapes of nodes, and the DER inside
/// OCTET STRINGs (a receipt's payload, a purchase's attributes), recursively.
public enum DERMutator {
    static let interestingTags: [UInt8] = [
        0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x0C, 0x13, 0x16, 0x17, 0x18, 0x24, 0x30, 0x31, 0x80, 0xA0, 0xA1,
        0xA3, 0x1F,
    ]
    static let interestingIntegers: [[UInt8]] = [
        [], [0x00], [0x01], [0xFF], [0x7F], [0x80], [0x00, 0x80], [0x00, 0x00, 0x01],
        [0x7F, 0xFF, 0xFF, 0xFF], [0x80, 0x00, 0x00, 0x00], [0x00, 0x80, 0x00, 0x00, 0x00],
        [0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], [0x80, 0, 0, 0, 0, 0, 0, 0], [0x01, 0, 0, 0, 0, 0, 0, 0, 0],
    ]

    /// Mutates `bytes` as a DER tree; bytes that are not one falls back to the byte mutator.
    public static func mutate(_ bytes: [UInt8], _ random: inout FuzzRandom, _ byteMutator: ByteMutator) -> [UInt8] {
        guard var tree = DERNode.parse(bytes) else {
            var copy = bytes
            byteMutator(&copy, maximumLength: bytes.count + 64)
            return copy
        }
        for _ in 0..<random.int(1...3) { mutate(&tree, &random, byteMutator, depth: 0) }
        return tree.bytes
    }

    /// One mutation somewhere in `tree`.
    public static func mutate(_ tree: inout DERNode, _ random: inout FuzzRandom, _ byteMutator: ByteMutator, depth: Int)
    {
        let path = tree.randomPath(&random)
        var node = tree[path]
        node.touch()
        let parentPath = path.isEmpty ? nil : Array(path.dropLast())
        switch random.int(0...11) {
        case 0, 1:
            // The contents of a primitive node, through libFuzzer's byte mutations.
            if node.isConstructed {
                node.form = node.form == .indefinite ? .minimal : .indefinite
            } else {
                byteMutator(&node.content, maximumLength: node.content.count + 64)
            }
        case 2:
            let tag = random.element(of: interestingTags)
            // Keep the primitive/constructed bit unless the node can change shape.
            node.tag = node.isConstructed ? (tag | 0x20) : (tag & ~0x20)
            if random.chance(1, in: 8) { node.tag = random.byte() & ~0x1F | (node.tag & 0x1F) | (node.tag & 0x20) }
        case 3:
            if node.tag == 0x02 || !node.isConstructed { node.content = random.element(of: interestingIntegers) }
        case 4:
            node.form =
                switch random.int(0...2) {
                case 0: node.isConstructed ? .indefinite : .long(random.int(1...4))
                case 1: .long(random.int(1...4))
                default: .minimal
                }
        case 5:
            // DER inside an OCTET STRING (the receipt payload in the CMS content, a purchase in an attribute).
            if !node.isConstructed, depth < 4, var inner = DERNode.parse(node.content) {
                mutate(&inner, &random, byteMutator, depth: depth + 1)
                node.content = inner.bytes
            } else if !node.isConstructed, node.tag == 0x04, node.content.count > 1 {
                // A primitive OCTET STRING cut into a constructed one (BER).
                let cut = random.int(1...node.content.count - 1)
                node = DERNode(
                    tag: 0x24,
                    children: [
                        DERNode(tag: 0x04, content: Array(node.content[..<cut])),
                        DERNode(tag: 0x04, content: Array(node.content[cut...])),
                    ],
                    form: random.chance(1, in: 2) ? .indefinite : .minimal
                )
            }
        case 6:
            // Wrap the node in another (deeper nesting).
            node = DERNode(tag: random.element(of: [0x30, 0x31, 0xA0, 0x24]), children: [node])
        default:
            // Shape: remove, repeat, swap or replace by a copy of another node.
            guard let parentPath else { break }
            var parent = tree[parentPath]
            parent.touch()
            let index = path.last!
            switch random.int(0...3) {
            case 0: parent.children!.remove(at: index)
            case 1: parent.children!.insert(node, at: index)
            case 2:
                let other = random.int(0...parent.children!.count - 1)
                parent.children!.swapAt(index, other)
            default:
                parent.children![index] = tree[tree.randomPath(&random)]
            }
            tree[parentPath] = parent
            return
        }
        tree[path] = node
    }
}
