/// Why an iOS 6-style transaction receipt could not be decoded, built or mapped: a ``CodedError`` of
/// ``TransactionReceiptErrorCode``.
public typealias TransactionReceiptError = CodedError<TransactionReceiptErrorCode>

/// The kinds of ``TransactionReceiptError``.
public enum TransactionReceiptErrorCode: String, ErrorCode {
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

extension CodedError where Kind == TransactionReceiptErrorCode {
    /// The receipt, a plist in it or the signature blob is larger than the limit.
    public static var tooLarge: Self { Self(.tooLarge, "the receipt is too large") }
    /// The receipt, its `purchase-info` or its `signature` is not base64.
    public static var invalidBase64: Self { Self(.invalidBase64, "not base64") }
    /// The outer or the purchase-info plist is not a well-formed OpenStep property list.
    public static var malformedPlist: Self { Self(.malformedPlist, "malformed property list") }
    /// A plist is well formed but not a dictionary of strings.
    public static var unexpectedStructure: Self { Self(.unexpectedStructure, "not a dictionary of strings") }
    /// The outer plist has no `purchase-info`.
    public static var missingPurchaseInfo: Self { Self(.missingPurchaseInfo, "no purchase-info") }
    /// The signature blob's lengths do not add up, or its certificate is not one DER element.
    public static var malformedSignature: Self { Self(.malformedSignature, "malformed signature blob") }
    /// The signature blob's version byte is neither 2 nor 3.
    public static var unsupportedSignatureVersion: Self {
        Self(.unsupportedSignatureVersion, "unsupported signature version")
    }
    /// A purchase-info key needed for a ``TillCore/PurchaseTransaction`` is absent.
    public static var missingField: Self { Self(.missingField, "a required purchase-info key is missing") }
    /// A purchase-info value is not in Apple's spelling (digits, `true`/`false`).
    public static var invalidField: Self { Self(.invalidField, "a purchase-info value is malformed") }
    /// The key, certificate or version given for signing do not fit together.
    public static var signingFailed: Self { Self(.signingFailed, "the receipt could not be signed") }
}
