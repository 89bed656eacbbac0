import Foundation
import SQLKit
import TillStorage

/// The databases behaviour suites run on: SQLite always, PostgreSQL when `TILL_TEST_POSTGRES_URL` names a server
/// (and always under CI, where a missing one fails: see `Prerequisite`).
public enum TestDatabase: String, Sendable, CaseIterable, CustomStringConvertible {
    case sqlite
    case postgres

    public var description: String { rawValue }

    public static var postgresURL: String? {
        guard let url = ProcessInfo.processInfo.environment["TILL_TEST_POSTGRES_URL"], !url.isEmpty else { return nil }
        return url
    }

    /// What a suite runs on here: both under CI or with PostgreSQL configured, SQLite alone otherwise.
    public static var all: [TestDatabase] { Prerequisite.postgres.shouldRun ? [.sqlite, .postgres] : [.sqlite] }

    /// A database no other test touches: a new SQLite file, or a new PostgreSQL database on the test server.
    public func fresh(prefix: String = "till_test") async throws -> DatabaseConfiguration {
        switch self {
        case .sqlite:
            return .sqlite(
                path: FileManager.default.temporaryDirectory.appendingPathComponent(
                    "\(prefix)-\(UUID().uuidString).sqlite"
                ).path
            )
        case .postgres:
            try Prerequisite.postgres.require()
            guard let base = Self.postgresURL, var components = URLComponents(string: base) else {
                throw TestSupportFailure("TILL_TEST_POSTGRES_URL is not a URL")
            }
            let name = prefix + "_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
            let admin = try await TillDatabase.open(.postgres(url: base))
            do {
                try await admin.sql.raw("CREATE DATABASE \(unsafeRaw: name)").run()
            } catch {
                try? await admin.shutdown()
                throw error
            }
            try await admin.shutdown()
            components.path = "/" + name
            return .postgres(url: components.string!)
        }
    }

    /// `fresh()` as a `database.url` setting.
    public func freshURL(prefix: String = "till_test") async throws -> String {
        switch try await fresh(prefix: prefix) {
        case .postgres(let url): return url
        case .sqlite(let path): return path
        case .sqliteInMemory: return ":memory:"
        }
    }
}
