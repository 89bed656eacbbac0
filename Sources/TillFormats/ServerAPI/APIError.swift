/// The body of an App Store Server API error response.
///
/// ```
/// {"errorCode":4000006,"errorMessage":"Invalid transaction id."}
/// ```
///
/// A 401 (bad or expired token) has no body.
public struct APIError: Codable, Sendable, Hashable, Error {
    /// The error code; its first three digits are the HTTP status.
    public var errorCode: Int
    /// A human-readable description.
    public var errorMessage: String

    public init(errorCode: Int, errorMessage: String) {
        self.errorCode = errorCode
        self.errorMessage = errorMessage
    }

    /// An error body for `code` with Apple's message for it.
    public init(_ code: ServerAPIErrorCode) {
        self.init(errorCode: code.rawValue, errorMessage: code.message)
    }

    /// The typed code (kept as is when Apple's code is one Till does not list).
    public var code: ServerAPIErrorCode { ServerAPIErrorCode(rawValue: errorCode) }
}
