/// Why a TillClient call did not succeed.
///
/// The ``kind`` says what to do about it: ``isTemporary`` errors (the server unreachable, a timeout, a 5xx, a
/// 429) go away by themselves, so retry later; a ``Kind/refused`` error is the server saying the request itself
/// is wrong, so sending it again changes nothing. When the server answered, ``status`` is the HTTP status and
/// ``code`` its stable machine code (`notEntitled`, `ownedByAnotherCustomer`, …).
public struct TillClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, as a value callers compare with `==`; new kinds can be added without breaking them.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Code: String, Hashable {
            case unreachable, timedOut, serverFault, refused, invalidResponse, checksumMismatch
            case untrustedSnapshot, fileSystem
        }

        private let code: Code
        private init(_ code: Code) { self.code = code }

        /// No connection, or it broke before an answer: the server is down, restarting, or the network is gone.
        public static let unreachable = Kind(.unreachable)
        /// No answer in time.
        public static let timedOut = Kind(.timedOut)
        /// The server answered 5xx: its fault, not the request's.
        public static let serverFault = Kind(.serverFault)
        /// The server answered 4xx: the request is wrong (or not allowed) as it stands.
        public static let refused = Kind(.refused)
        /// An answer the client could not read.
        public static let invalidResponse = Kind(.invalidResponse)
        /// Downloaded bytes whose SHA-256 is not the one the server listed.
        public static let checksumMismatch = Kind(.checksumMismatch)
        /// A snapshot whose signature or subject does not check out.
        public static let untrustedSnapshot = Kind(.untrustedSnapshot)
        /// Reading or writing the client's own files failed.
        public static let fileSystem = Kind(.fileSystem)

        public var description: String { code.rawValue }
    }

    public var kind: Kind
    /// The HTTP status, when the server answered.
    public var status: Int?
    /// The server's machine code from `{"error":{"code","message"}}`, when it sent one.
    public var code: String?
    public var message: String

    public init(_ kind: Kind, status: Int? = nil, code: String? = nil, message: String) {
        self.kind = kind
        self.status = status
        self.code = code
        self.message = message
    }

    /// Whether the same request may succeed later unchanged: unreachable, timed out, a 5xx, a 408 or a 429, or
    /// an answer that could not be read.
    public var isTemporary: Bool {
        switch kind {
        case .unreachable, .timedOut, .serverFault, .invalidResponse: true
        case .refused: status == 408 || status == 429
        default: false
        }
    }

    /// Whether the server said this request will never succeed as it is: a 4xx other than 401, 403, 404, 408,
    /// 425 and 429. A wrong app key (401), a missing route (404) or a refusal of access (403) are the app's
    /// configuration or state, not the request's, and may change.
    public var isPermanentRefusal: Bool {
        guard kind == .refused, let status else { return false }
        return !Self.notPermanent.contains(status)
    }

    private static let notPermanent: Set<Int> = [401, 403, 404, 408, 425, 429]

    public var description: String {
        var text = "\(kind)"
        if let status { text += " (HTTP \(status)" + (code.map { " \($0)" } ?? "") + ")" }
        return text + ": " + message
    }
}
