/// Why an OpenStep property list could not be read: a ``CodedError`` of ``OpenStepPlistErrorCode``, with the byte
/// offset it was found at.
public typealias OpenStepPlistError = CodedError<OpenStepPlistErrorCode>

/// The kinds of ``OpenStepPlistError``.
public enum OpenStepPlistErrorCode: String, ErrorCode {
    public static let locatesOffset = true

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

extension CodedError where Kind == OpenStepPlistErrorCode {
    /// The document is larger than the limit.
    public static var tooLarge: Self { Self(.tooLarge, "the document is too large", offset: 0) }
    /// Dictionaries and arrays are nested deeper than the limit.
    public static var tooDeep: Self { Self(.tooDeep, "nesting is too deep", offset: 0) }
    /// The document ends in the middle of a value.
    public static var unexpectedEnd: Self { Self(.unexpectedEnd, "unexpected end of the document", offset: 0) }
    /// A character that cannot start or continue the expected token.
    public static var unexpectedCharacter: Self { Self(.unexpectedCharacter, "unexpected character", offset: 0) }
    /// A quoted string without its closing quote.
    public static var unterminatedString: Self { Self(.unterminatedString, "unterminated string", offset: 0) }
    /// A backslash escape that is not part of the grammar.
    public static var invalidEscape: Self { Self(.invalidEscape, "invalid escape", offset: 0) }
    /// A string whose bytes are not UTF-8.
    public static var invalidUTF8: Self { Self(.invalidUTF8, "invalid UTF-8", offset: 0) }
    /// A dictionary holding the same key twice.
    public static var duplicateKey: Self { Self(.duplicateKey, "duplicate key", offset: 0) }
    /// Something other than whitespace after the top-level value.
    public static var trailingData: Self { Self(.trailingData, "data after the top-level value", offset: 0) }
}
