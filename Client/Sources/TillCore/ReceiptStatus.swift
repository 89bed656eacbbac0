/// A `status` of Apple's verifyReceipt endpoint and what a client must do about it.
///
/// HTTP status is 200 for every one of these; the outcome is in the body's `status`.
public struct ReceiptStatus: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public var rawValue: Int

    public init(rawValue: Int) { self.rawValue = rawValue }
    public init(_ rawValue: Int) { self.rawValue = rawValue }

    /// What a caller should do with a status.
    public enum Action: Sendable, Hashable {
        /// The receipt is valid (it may still hold expired subscriptions).
        case valid
        /// The request itself is wrong, not the receipt (unreadable JSON, 21000; a shared secret the App Store
        /// does not hold, 21004): the sender's configuration must be fixed, then the same receipt sent again.
        case fixRequest
        /// The receipt belongs to the other environment: send it there.
        case redirect(to: AppStoreEnvironment)
        /// A temporary problem on Apple's side: try again later.
        case retryLater
        /// Final: the receipt will never verify here.
        case terminal
    }

    public static let valid = ReceiptStatus(0)
    public static let badRequest = ReceiptStatus(21000)
    public static let noLongerSent = ReceiptStatus(21001)
    public static let malformedReceiptData = ReceiptStatus(21002)
    public static let notAuthenticated = ReceiptStatus(21003)
    public static let sharedSecretMismatch = ReceiptStatus(21004)
    public static let serverUnavailable = ReceiptStatus(21005)
    public static let subscriptionExpired = ReceiptStatus(21006)
    public static let sandboxReceiptInProduction = ReceiptStatus(21007)
    public static let productionReceiptInSandbox = ReceiptStatus(21008)
    public static let internalDataAccessError = ReceiptStatus(21009)
    public static let accountNotFound = ReceiptStatus(21010)

    /// The range of internal data access errors whose `is-retryable` flag decides.
    public static let internalErrorRange: ClosedRange<Int> = 21100...21199

    /// The statuses Apple documents, in order (the 211xx range is represented by its first code).
    public static let documented: [ReceiptStatus] = [
        .valid, .badRequest, .noLongerSent, .malformedReceiptData, .notAuthenticated, .sharedSecretMismatch,
        .serverUnavailable, .subscriptionExpired, .sandboxReceiptInProduction, .productionReceiptInSandbox,
        .internalDataAccessError, .accountNotFound, ReceiptStatus(21100),
    ]

    /// What to do about this status. `isRetryable` is the response's `is-retryable` flag (used for 21100–21199).
    public func action(isRetryable: Bool? = nil) -> Action {
        switch rawValue {
        case 0, 21006: return .valid
        case 21000, 21004: return .fixRequest
        case 21002, 21005, 21009: return .retryLater
        case 21001, 21003, 21010: return .terminal
        case 21007: return .redirect(to: .sandbox)
        case 21008: return .redirect(to: .production)
        case Self.internalErrorRange: return isRetryable == false ? .terminal : .retryLater
        default: return .retryLater
        }
    }

    /// Whether the status is one Apple documents (including the whole 21100–21199 range).
    public var isDocumented: Bool {
        Self.internalErrorRange.contains(rawValue) || Self.documented.contains(self)
    }

    /// Whether responses with this status carry the `is-retryable` flag.
    public var carriesRetryableFlag: Bool { Self.internalErrorRange.contains(rawValue) }

    /// Apple's meaning of the status, in a sentence.
    public var meaning: String {
        switch rawValue {
        case 0: "The receipt is valid."
        case 21000: "The request was not an HTTP POST, or its JSON could not be read."
        case 21001: "This status code is no longer sent by the App Store."
        case 21002: "The receipt-data property was malformed or missing, or the service had a temporary issue."
        case 21003: "The receipt could not be authenticated."
        case 21004: "The shared secret does not match the one on file for the account."
        case 21005: "The receipt server was temporarily unable to provide the receipt."
        case 21006: "The receipt is valid but the subscription has expired."
        case 21007: "This receipt is from the sandbox environment but was sent to production."
        case 21008: "This receipt is from the production environment but was sent to the sandbox."
        case 21009: "Internal data access error."
        case 21010: "The user account cannot be found or has been deleted."
        case Self.internalErrorRange: "Internal data access error; see is-retryable."
        default: "Unknown status."
        }
    }

    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(Int.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { String(rawValue) }
}
