import Foundation
import SQLKit
import Synchronization

/// What an operator and a load balancer ask of a database: a consistent copy of an SQLite file, its integrity and
/// the migrations it has (`till backup`, `till check`), and whether it answers at all (`/ready`).
extension TillDatabase {
    /// Writes a consistent copy of this SQLite database to a new file at `path` (`VACUUM INTO`): the database as
    /// of one moment, taken while writers go on (they wait only for what a reader makes them wait for in WAL mode:
    /// nothing), compacted, in one file without a log.
    public func copySQLite(to path: String) async throws {
        guard engine == .sqlite else {
            throw DatabaseError(.invalidConfiguration, "copySQLite is for an SQLite database")
        }
        try await sql.raw("VACUUM INTO \(bind: path)").run()
    }

    /// SQLite's own check of every page, index and constraint (`PRAGMA integrity_check`): empty when whole. On
    /// PostgreSQL, which checks its pages itself, empty.
    public func integrityProblems() async throws -> [String] {
        guard engine == .sqlite else { return [] }
        let rows = try await sql.raw("PRAGMA integrity_check").all()
        let lines = try rows.map { row in
            try row.decode(column: row.allColumns.first ?? "integrity_check", as: String.self)
        }
        return lines == ["ok"] ? [] : lines
    }

    /// The tables of the database (for PostgreSQL, of every schema but the system's, whoever owns them): none in a
    /// database just made.
    public func tableNames() async throws -> [String] {
        switch engine {
        case .sqlite:
            try await sql.raw("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all()
                .map { try $0.decode(column: "name", as: String.self) }
        case .postgres:
            try await sql.raw(
                """
                SELECT n.nspname || '.' || c.relname AS name FROM pg_catalog.pg_class c
                JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                WHERE c.relkind IN ('r', 'p') AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
                ORDER BY name
                """
            ).all().map { try $0.decode(column: "name", as: String.self) }
        }
    }

    /// The ids of `schema`'s migrations applied to this database, none if it has no migrations table.
    public func appliedMigrations(schema: String) async throws -> [String] {
        let exists: Bool
        switch engine {
        case .sqlite:
            exists = try await sql.raw(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'till_schema_migrations'"
            ).first() != nil
        case .postgres:
            exists = try await sql.raw("SELECT to_regclass('till_schema_migrations') IS NOT NULL AS found").first()?
                .decode(column: "found", as: Bool.self) ?? false
        }
        guard exists else { return [] }
        return try await sql.raw(
            "SELECT id FROM till_schema_migrations WHERE schema = \(bind: schema) ORDER BY id"
        ).all().map { try $0.decode(column: "id", as: String.self) }
    }

    /// Whether a one-row read answers within `limit` (a readiness probe). It goes through the gate, so a failure
    /// begins an outage as any read's would; past `limit` the answer is no, without waiting for the read (which
    /// the gate may hold for its `wait`), which finishes on its own.
    public func answersRead(within limit: Duration) async -> Bool {
        let first = FirstAnswer()
        return await withCheckedContinuation { continuation in
            first.set(continuation)
            let read = Task {
                let answered = (try? await self.sql.raw("SELECT 1 AS n").first()) != nil
                first.resume(answered)
            }
            Task {
                try? await Task.sleep(for: limit)
                first.resume(false)
                read.cancel()
            }
        }
    }
}

/// The first of several answers to one question; later ones are dropped.
private final class FirstAnswer: Sendable {
    private let waiting = Mutex<CheckedContinuation<Bool, Never>?>(nil)

    func set(_ continuation: CheckedContinuation<Bool, Never>) { waiting.withLock { $0 = continuation } }

    func resume(_ answer: Bool) { waiting.withLock { $0.take() }?.resume(returning: answer) }
}
