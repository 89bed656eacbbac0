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

    /// Checks `bytes`; throws a ``Refusal`` saying what is wrong.
    public static func check(_ bytes: [UInt8], maximumDepth: Int = 64) throws(Refusal) {
        let tape: JSONTape
        do {
            tape = try JSONTape(bytes, maximumDepth: maximumDepth)
        } catch {
            throw Refusal(description: error.description)
        }
        // A raw control character is a syntax error already; only an escaped one can be U+0000.
        for (index, node) in tape.nodes.enumerated() where node.kind == .string && tape.holdsNull(at: index) {
            throw Refusal(description: "a string holds U+0000")
        }
    }
}
