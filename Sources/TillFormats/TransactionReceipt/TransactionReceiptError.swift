/// Why an iOS 6-style transaction receipt could not be decoded, built or mapped.
///
/// Compare errors with `==` (it compares ``code`` only) or read ``code``; new codes may be added
/// without breaking callers.
public struct TransactionReceiptError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: String, Sendable {
        case tooLarge
        case invalidBase64
        case malformedPlist
        case unexpectedStructure
        case missingPurchaseInfo
        case malformedSignature
        case unsupportedSignatureVersion
        case missingField
        case invalidField
        case signingFailed
    }

    private let base: Code
    /// A human-readable reason.
    public let message: String

    private init(_ base: Code, _ message: String) {
        self.base = base
        self.message = message
    }

    /// A stable machine-readable code, such as `malformedSignature`.
    public var code: String { base.rawValue }

    public var description: String { "\(code): \(message)" }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.base == rhs.base }
    public func hash(into hasher: inout Hasher) { hasher.combine(base) }

    /// The receipt, a plist in it or the signature blob is larger than the limit.
    public static let tooLarge = Self(.tooLarge, "the receipt is too large")
    /// The receipt, its `purchase-info` or its `signature` is not base64.
    public static let invalidBase64 = Self(.invalidBase64, "not base64")
    /// The outer or the purchase-info plist is not a well-formed OpenStep property list.
    public static let malformedPlist = Self(.malformedPlist, "malformed property list")
    /// A plist is well formed but not a dictionary of strings.
    public static let unexpectedStructure = Self(.unexpectedStructure, "not a dictionary of strings")
    /// The outer plist has no `purchase-info`.
    public static let missingPurchaseInfo = Self(.missingPurchaseInfo, "no purchase-info")
    /// The signature blob's lengths do not add up, or its certificate is not one DER element.
    public static let malformedSignature = Self(.malformedSignature, "malformed signature blob")
    /// The signature blob's version byte is neither 2 nor 3.
    public static let unsupportedSignatureVersion = Self(.unsupportedSignatureVersion, "unsupported signature version")
    /// A purchase-info key needed for a ``TillCore/PurchaseTransaction`` is absent.
    public static let missingField = Self(.missingField, "a required purchase-info key is missing")
    /// A purchase-info value is not in Apple's spelling (digits, `true`/`false`).
    public static let invalidField = Self(.invalidField, "a purchase-info value is malformed")
    /// The key, certificate or version given for signing do not fit together.
    public static let signingFailed = Self(.signingFailed, "the receipt could not be signed")

    /// The same kind of error with a specific message.
    func with(_ message: String) -> Self { Self(base, message) }
}
