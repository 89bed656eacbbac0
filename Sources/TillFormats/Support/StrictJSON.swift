/// JSON read as strictly as the signed payloads are (``JSONTape``): RFC 8259, no key twice in one object, nesting
/// limited; and no U+0000 in a string, which PostgreSQL cannot store in text. The servers check every request body
/// with it before decoding, so that what a body means never depends on its member order (Foundation's decoder takes
/// the first of two equal keys; another reader may take the last) and a body is never accepted only to fail in the
/// database.
public enum StrictJSON {
    /// Why a text was refused, in a few words (with the byte offset of a syntax error).
    public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        public let description: String
    }

    /// A step of the way to a value: a member's key or an element's index. A `CodingKey` as Foundation's decoder
    /// makes them (an index's `stringValue` is `Index 2`), so that one writer of paths, `JSONBody.describe`'s, writes
    /// both its paths and these.
    public enum PathStep: CodingKey, Sendable, Hashable {
        case key(String)
        case index(Int)

        public var stringValue: String {
            switch self {
            case .key(let name): name
            case .index(let position): "Index \(position)"
            }
        }
        public var intValue: Int? {
            if case .index(let position) = self { return position }
            return nil
        }
        public init?(stringValue: String) { self = .key(stringValue) }
        public init?(intValue: Int) { self = .index(intValue) }
    }

    /// The `null`s of a checked text: where each one's four bytes start, and the way to any of them, found only when
    /// asked. A body of 2 MiB holds about 400,000 nulls, and a way written for each cost most of its reading.
    public struct Nulls: Sendable {
        /// The text's tape; nil when the text holds no null or nobody asked for them.
        private let tape: JSONTape?
        /// The offset of each `null` in the bytes checked, in the order of the text.
        public let offsets: [Int]

        static let none = Nulls(tape: nil, offsets: [])

        init(tape: JSONTape?, offsets: [Int]) {
            self.tape = tape
            self.offsets = offsets
        }

        public var isEmpty: Bool { offsets.isEmpty }

        /// The way to the `null` at `offset` (one of ``offsets``): empty for a text that is only `null`. Member keys
        /// are given with their escapes resolved, as a decoder gives them.
        public func path(to offset: Int) -> [PathStep] {
            guard let tape else { return [] }
            var steps: [PathStep] = []
            var index = 0
            while true {
                let node = tape.nodes[index]
                switch node.kind {
                case .object:
                    // Each member is its key's string node, then its value's nodes.
                    var key = index + 1
                    while key < Int(node.next), !Self.holds(tape.nodes[key + 1], offset) {
                        key = Int(tape.nodes[key + 1].next)
                    }
                    guard key < Int(node.next) else { return steps }
                    steps.append(.key(tape.string(at: key)))
                    index = key + 1
                case .array:
                    var element = index + 1
                    var position = 0
                    while element < Int(node.next), !Self.holds(tape.nodes[element], offset) {
                        element = Int(tape.nodes[element].next)
                        position += 1
                    }
                    guard element < Int(node.next) else { return steps }
                    steps.append(.index(position))
                    index = element
                default:
                    return steps
                }
            }
        }

        /// The offset of the `null` that `path` (a decoder's coding path) leads to, or nil when it leads to something
        /// else or nowhere.
        public func offset(at path: [any CodingKey]) -> Int? {
            guard let tape else { return nil }
            var index = 0
            for step in path {
                let node = tape.nodes[index]
                switch node.kind {
                case .object:
                    var key = index + 1
                    while key < Int(node.next), !tape.string(at: key, equals: step.stringValue) {
                        key = Int(tape.nodes[key + 1].next)
                    }
                    guard key < Int(node.next) else { return nil }
                    index = key + 1
                case .array:
                    guard let position = step.intValue, position >= 0 else { return nil }
                    var element = index + 1
                    for _ in 0..<position where element < Int(node.next) {
                        element = Int(tape.nodes[element].next)
                    }
                    guard element < Int(node.next) else { return nil }
                    index = element
                default:
                    return nil
                }
            }
            let node = tape.nodes[index]
            return node.kind == .null ? Int(node.start) : nil
        }

        /// Whether a value's bytes hold `offset` (a container's run from its opening bracket to its closing one).
        private static func holds(_ node: JSONTape.Node, _ offset: Int) -> Bool {
            Int(node.start) <= offset && offset < Int(node.end)
        }
    }

    /// Checks `bytes`; throws a ``Refusal`` saying what is wrong. Answers where every `null` is: a reader whose
    /// requests have no field that may be null refuses one its type reads (`JSONBody.decode(refusingNull:)`), where a
    /// decoder would read it as the field left out. With `findingNulls` false, answers none without looking: a reader
    /// that takes `null` as a field left out.
    @discardableResult
    public static func check(_ bytes: [UInt8], maximumDepth: Int = 64, findingNulls: Bool = true) throws(Refusal)
        -> Nulls
    {
        let tape: JSONTape
        do {
            tape = try JSONTape(bytes, maximumDepth: maximumDepth)
        } catch {
            throw Refusal(description: error.description)
        }
        var offsets: [Int] = []
        // A raw control character is a syntax error already; only an escaped one can be U+0000.
        for (index, node) in tape.nodes.enumerated() {
            if node.kind == .string && tape.holdsNull(at: index) {
                throw Refusal(description: "a string holds U+0000")
            }
            if node.kind == .null && findingNulls { offsets.append(Int(node.start)) }
        }
        return offsets.isEmpty ? .none : Nulls(tape: tape, offsets: offsets)
    }
}
