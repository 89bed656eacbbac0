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

    /// A `null` in the text: the way to it and where its four bytes are.
    public struct Null: Sendable, Hashable {
        /// Empty for a text that is only `null`.
        public let path: [PathStep]
        /// The offsets of its `null` in the bytes checked.
        public let bytes: Range<Int>
    }

    /// Checks `bytes`; throws a ``Refusal`` saying what is wrong. Answers every `null` in the order of the text: a
    /// reader whose requests have no field that may be null refuses one its type reads
    /// (`JSONBody.decode(refusingNull:)`), where a decoder would read it as the field left out.
    @discardableResult
    /// With `findingNulls` false, answers none without looking: a reader that takes `null` as a field left out.
    public static func check(_ bytes: [UInt8], maximumDepth: Int = 64, findingNulls: Bool = true) throws(Refusal) -> [Null] {
        let tape: JSONTape
        do {
            tape = try JSONTape(bytes, maximumDepth: maximumDepth)
        } catch {
            throw Refusal(description: error.description)
        }
        var holdsNull = false
        // A raw control character is a syntax error already; only an escaped one can be U+0000.
        for (index, node) in tape.nodes.enumerated() {
            if node.kind == .string && tape.holdsNull(at: index) {
                throw Refusal(description: "a string holds U+0000")
            }
            if node.kind == .null { holdsNull = true }
        }
        guard holdsNull, findingNulls else { return [] }
        var nulls: [Null] = []
        var path: [PathStep] = []
        collectNulls(in: tape, at: 0, path: &path, into: &nulls)
        return nulls
    }

    /// Every `null` at or below node `index`, which `path` leads to. One path grows and shrinks as the walk goes, and
    /// is copied only for a null: 2 MiB of nulls spent a third of its reading on a new path for every element.
    private static func collectNulls(in tape: JSONTape, at index: Int, path: inout [PathStep], into nulls: inout [Null]) {
        let node = tape.nodes[index]
        switch node.kind {
        case .null:
            nulls.append(Null(path: path, bytes: Int(node.start)..<Int(node.end)))
        case .object:
            // Each member is its key's string node, then its value's nodes.
            var key = index + 1
            while key < Int(node.next) {
                let name = String(
                    decoding: tape.bytes[Int(tape.nodes[key].start)..<Int(tape.nodes[key].end)],
                    as: UTF8.self
                )
                path.append(.key(name))
                collectNulls(in: tape, at: key + 1, path: &path, into: &nulls)
                path.removeLast()
                key = Int(tape.nodes[key + 1].next)
            }
        case .array:
            var element = index + 1
            var position = 0
            while element < Int(node.next) {
                path.append(.index(position))
                collectNulls(in: tape, at: element, path: &path, into: &nulls)
                path.removeLast()
                element = Int(tape.nodes[element].next)
                position += 1
            }
        default:
            break
        }
    }
}
