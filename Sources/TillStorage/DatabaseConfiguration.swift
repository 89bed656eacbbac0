import Foundation

/// Where a Till component keeps its data.
public enum DatabaseConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// An SQLite file (created if missing), in WAL mode.
    case sqlite(path: String)
    /// An SQLite database that lives as long as the process.
    case sqliteInMemory
    /// A PostgreSQL database, `postgres://user:password@host:port/database`.
    case postgres(url: String)

    /// Parses `sqlite:PATH`, `sqlite::memory:`, `:memory:`, `postgres://…` / `postgresql://…`, or a bare file path.
    public init(parsing text: String) throws(DatabaseError) {
        if text == ":memory:" || text == "sqlite::memory:" || text == "memory" {
            self = .sqliteInMemory
        } else if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            try Self.checkPostgres(text)
            self = .postgres(url: text)
        } else if text.hasPrefix("sqlite://") {
            self = .sqlite(path: String(text.dropFirst("sqlite://".count)))
        } else if text.hasPrefix("sqlite:") {
            self = .sqlite(path: String(text.dropFirst("sqlite:".count)))
        } else if text.isEmpty || text.contains("://") {
            throw DatabaseError(
                .invalidConfiguration,
                "unsupported database \(text); use a file path, :memory: or postgres://…"
            )
        } else {
            self = .sqlite(path: text)
        }
    }

    /// What PostgresKit needs of a URL (a user and a host, a port that is a number, a known `sslmode`), said in a
    /// sentence when it is missing: PostgresKit's own refusal is Foundation's `NSURLErrorDomain Code=-1000 "(null)"`.
    private static func checkPostgres(_ text: String) throws(DatabaseError) {
        let shown = DatabaseConfiguration.postgres(url: text).description
        let shape = "postgres://user[:password]@host[:port]/database[?sslmode=disable|prefer|require]"
        guard let url = URLComponents(string: text) else {
            throw DatabaseError(.invalidConfiguration, "\(shown) is not a URL; write \(shape)")
        }
        guard url.user?.isEmpty == false else {
            throw DatabaseError(.invalidConfiguration, "\(shown) names no user; write \(shape)")
        }
        guard url.host?.isEmpty == false else {
            throw DatabaseError(.invalidConfiguration, "\(shown) names no host; write \(shape)")
        }
        let modes = ["disable", "false", "prefer", "allow", "true", "require", "verify-ca", "verify-full"]
        let names = ["tlsmode", "sslmode", "ssl", "tls"]
        if let mode = url.queryItems?.last(where: { names.contains($0.name.lowercased()) }),
            !modes.contains(mode.value ?? "")
        {
            throw DatabaseError(
                .invalidConfiguration,
                "\(shown): \(mode.name) is disable, prefer or require, not \(mode.value ?? "empty")"
            )
        }
    }

    public var description: String {
        switch self {
        case .sqlite(let path): "sqlite:\(path)"
        case .sqliteInMemory: "sqlite::memory:"
        case .postgres(let url):
            // Hide the password.
            if let at = url.firstIndex(of: "@"),
                let colon = url[url.index(url.startIndex, offsetBy: 11)..<at].lastIndex(of: ":")
            {
                url[..<url.index(after: colon)] + "***" + url[at...]
            } else {
                url
            }
        }
    }
}

/// Why the database could not be used.
public struct DatabaseError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: RawRepresentable, Sendable, Hashable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let invalidConfiguration = Code(rawValue: "invalidConfiguration")
        public static let migrationFailed = Code(rawValue: "migrationFailed")
        /// The database was migrated by a newer release than this build (`TillDatabase.migrate`).
        public static let newerSchema = Code(rawValue: "newerSchema")
        public static let conflict = Code(rawValue: "conflict")
        public static let notFound = Code(rawValue: "notFound")
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
