/// Why an OpenStep property list could not be read.
///
/// Compare errors with `==` (it compares ``code`` only) or switch on ``code``; new codes may be added.
public struct OpenStepPlistError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: String, Sendable {
        case tooLarge
        case tooDeep
        case unexpectedEnd
        case unexpectedCharacter
        case unterminatedString
        case invalidEscape
        case invalidUTF8
        case duplicateKey
        case trailingData
    }

    private let base: Code
    /// A human-readable reason, naming what was found and where.
    public let message: String
    /// The byte offset in the document the problem was found at.
    public let offset: Int

    private init(_ base: Code, _ message: String, offset: Int) {
        self.base = base
        self.message = message
        self.offset = offset
    }

    /// A stable machine-readable code, such as `unterminatedString`.
    public var code: String { base.rawValue }

    public var description: String { "\(code) at byte \(offset): \(message)" }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.base == rhs.base }
    public func hash(into hasher: inout Hasher) { hasher.combine(base) }

    /// The document is larger than the limit.
    public static let tooLarge = Self(.tooLarge, "the document is too large", offset: 0)
    /// Dictionaries and arrays are nested deeper than the limit.
    public static let tooDeep = Self(.tooDeep, "nesting is too deep", offset: 0)
    /// The document ends in the middle of a value.
    public static let unexpectedEnd = Self(.unexpectedEnd, "unexpected end of the document", offset: 0)
    /// A character that cannot start or continue the expected token.
    public static let unexpectedCharacter = Self(.unexpectedCharacter, "unexpected character", offset: 0)
    /// A quoted string without its closing quote.
    public static let unterminatedString = Self(.unterminatedString, "unterminated string", offset: 0)
    /// A backslash escape that is not part of the grammar.
    public static let invalidEscape = Self(.invalidEscape, "invalid escape", offset: 0)
    /// A string whose bytes are not UTF-8.
    public static let invalidUTF8 = Self(.invalidUTF8, "invalid UTF-8", offset: 0)
    /// A dictionary holding the same key twice.
    public static let duplicateKey = Self(.duplicateKey, "duplicate key", offset: 0)
    /// Something other than whitespace after the top-level value.
    public static let trailingData = Self(.trailingData, "data after the top-level value", offset: 0)

    /// The same kind of error with a specific message and position.
    func at(_ offset: Int, _ message: String) -> Self { Self(base, message, offset: offset) }
}
