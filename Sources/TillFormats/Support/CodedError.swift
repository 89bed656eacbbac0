/// The kinds of one of TillFormats' errors: each case's raw value is its stable machine-readable code.
public protocol ErrorCode: RawRepresentable, Hashable, Sendable where RawValue == String {
    /// Whether the errors of these kinds say where in the document they were found (a parser's: ``CodedError/offset``
    /// then appears in the description).
    static var locatesOffset: Bool { get }
}

extension ErrorCode {
    public static var locatesOffset: Bool { false }
}

/// How TillFormats says why bytes could not be read, built or checked (``TransactionReceiptError``,
/// ``OpenStepPlistError``, ``TransactionReceiptSignature/Failure``): a kind, whose raw value is a stable code, and a
/// message for people, naming what was found and, for a parser, where (`offset`).
///
/// Compare errors with `==` (it compares the kind only, never the message) or read ``code``; new kinds may be added,
/// so a `switch` over ``kind`` needs a `default`.
public struct CodedError<Kind: ErrorCode>: Error, Sendable, Hashable, CustomStringConvertible {
    public let kind: Kind
    /// A human-readable reason.
    public let message: String
    /// The byte offset in the document the problem was found at, for a parser's errors (0 for the others).
    public let offset: Int

    init(_ kind: Kind, _ message: String, offset: Int = 0) {
        self.kind = kind
        self.message = message
        self.offset = offset
    }

    /// A stable machine-readable code, such as `malformedSignature`.
    public var code: String { kind.rawValue }

    public var description: String {
        Kind.locatesOffset ? "\(code) at byte \(offset): \(message)" : "\(code): \(message)"
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.kind == rhs.kind }
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    /// The same kind of error with a specific message.
    func with(_ message: String) -> Self { Self(kind, message, offset: offset) }

    /// The same kind of error with a specific message and position.
    func at(_ offset: Int, _ message: String) -> Self { Self(kind, message, offset: offset) }
}
