import Foundation
import SQLKit

/// One step of a schema: an id that never changes once released, and the statements that make it.
public struct Migration: Sendable {
    public var id: String
    public var statements: [String]
    /// The engine the statements are for (a storage layout that only one of them has); the other records the
    /// step as applied without running anything. Nil: both.
    public var engine: TillDatabase.Engine?

    public init(_ id: String, _ statements: [String], only engine: TillDatabase.Engine? = nil) {
        self.id = id
        self.statements = statements
        self.engine = engine
    }
}

extension TillDatabase {
    /// Applies, in order and once each, the migrations not yet recorded in `till_schema_migrations`.
    ///
    /// Each migration runs in its own transaction with its record, so a failure leaves the schema at the
    /// previous step. Several processes may start at once: on PostgreSQL an advisory lock serialises them,
    /// on SQLite the write lock does; each re-reads what is applied inside its transaction.
    public func migrate(_ migrations: [Migration], schema: String) async throws {
        let engine = self.engine
        // Under a lock too, one for every schema: PostgreSQL's CREATE TABLE IF NOT EXISTS is not safe against
        // itself, two first starts on an empty database can both try to create the table (a duplicate key in pg_type).
        try await transaction { db in
            if engine == .postgres {
                let key = Int64(Self.lockKey("till_schema_migrations"))
                try await db.raw("SELECT pg_advisory_xact_lock(\(literal: key))").run()
            }
            try await db.raw(
                """
                CREATE TABLE IF NOT EXISTS till_schema_migrations (
                    schema TEXT NOT NULL, id TEXT NOT NULL, applied_at BIGINT NOT NULL, PRIMARY KEY (schema, id))
                """
            ).run()
            // A step this build does not know was made by a newer release: its schema may mean what this build
            // would misread or undo. Refused before anything is written (the statement above changes nothing on a
            // database that has the table), so the newer release can still open it.
            let known = Set(migrations.map(\.id))
            let unknown = try await db.raw(
                "SELECT id FROM till_schema_migrations WHERE schema = \(bind: schema) ORDER BY id"
            ).all().compactMap { try? $0.decode(column: "id", as: String.self) }.filter { !known.contains($0) }
            if !unknown.isEmpty {
                throw DatabaseError(
                    .newerSchema,
                    "the database's \(schema) schema has \(unknown.count) migration\(unknown.count == 1 ? "" : "s") "
                        + "this build does not know (\(unknown.joined(separator: ", "))): a newer Till wrote it. "
                        + "Run that release or a later one; nothing was changed"
                )
            }
        }
        for migration in migrations {
            try await transaction { db in
                if engine == .postgres {
                    try await db.raw("SELECT pg_advisory_xact_lock(\(literal: Int64(Self.lockKey(schema))))").run()
                }
                let applied = try await db.raw(
                    "SELECT id FROM till_schema_migrations WHERE schema = \(bind: schema) AND id = \(bind: migration.id)"
                ).first()
                guard applied == nil else { return }
                for statement in migration.statements where migration.engine == nil || migration.engine == engine {
                    do {
                        try await db.raw(SQLQueryString(statement)).run()
                    } catch {
                        throw DatabaseError(
                            .migrationFailed,
                            "\(schema) migration \(migration.id) failed: \(String(reflecting: error))"
                        )
                    }
                }
                try await db.raw(
                    """
                    INSERT INTO till_schema_migrations (schema, id, applied_at)
                    VALUES (\(bind: schema), \(bind: migration.id), \(bind: Int64(Date().timeIntervalSince1970 * 1000)))
                    """
                ).run()
            }
        }
        if engine == .sqlite { try await keepChecksAsComparisons() }
    }

    /// SQLite checks `CHECK (column IN ('a', 'b', 'c'))`, a list of three values or more, by building a temporary
    /// table of the list, with a page cache of its own, at every run of every statement that writes the table
    /// (`OpenEphemeral` in its plan). A purchase ran about 20 of them inside the writer's lock: 190 of its 780
    /// allocations and 324 KB of its 592 KB (docs/benchmarks.md). The same constraint written
    /// `column = 'a' OR column = 'b' OR column = 'c'` is compared in place, and the same rows pass (a NULL passes
    /// both). The migrations keep their `IN` lists, which PostgreSQL runs as they are; on SQLite each table's stored
    /// definition is rewritten after them, as SQLite documents for a change that leaves every row as it is (its
    /// `writable_schema`, then the schema's version raised so that every connection reads the definitions again). A
    /// table that a later migration rebuilds is rewritten on that start; a database already rewritten is only read.
    private func keepChecksAsComparisons() async throws {
        try await transaction { db in
            let tables = try await db.raw(
                "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE '%CHECK (%'"
            ).all().map {
                (try $0.decode(column: "name", as: String.self), try $0.decode(column: "sql", as: String.self))
            }
            let rewritten = tables.compactMap { name, sql -> (String, String)? in
                let comparisons = Self.checksAsComparisons(sql)
                return comparisons == sql ? nil : (name, comparisons)
            }
            guard !rewritten.isEmpty else { return }
            let version =
                try await db.raw("PRAGMA schema_version").first()?.decode(column: "schema_version", as: Int.self) ?? 0
            // The pragma is the connection's, not the transaction's: it is turned off again whatever happens.
            try await db.raw("PRAGMA writable_schema = ON").run()
            do {
                for (name, sql) in rewritten {
                    try await db.raw(
                        "UPDATE sqlite_master SET sql = \(bind: sql) WHERE type = 'table' AND name = \(bind: name)"
                    ).run()
                }
                try await db.raw("PRAGMA schema_version = \(unsafeRaw: String(version + 1))").run()
            } catch {
                try? await db.raw("PRAGMA writable_schema = OFF").run()
                throw error
            }
            try await db.raw("PRAGMA writable_schema = OFF").run()
        }
    }

    /// A table's definition with each `CHECK (column IN (values))` written as `CHECK (column = value OR …)`.
    static func checksAsComparisons(_ sql: String) -> String {
        sql.replacing(/CHECK \((\w+) IN \(([^()']*(?:'[^']*'[^()']*)*)\)\)/) { match in
            let column = match.output.1
            // The values are split at the commas outside quotes ('it''s' is two quoted runs, one value).
            var values: [String] = []
            var value = ""
            var quoted = false
            for character in match.output.2 {
                if character == "'" { quoted.toggle() }
                if character == ",", !quoted {
                    values.append(value.trimmingCharacters(in: .whitespacesAndNewlines))
                    value = ""
                } else {
                    value.append(character)
                }
            }
            values.append(value.trimmingCharacters(in: .whitespacesAndNewlines))
            return "CHECK (" + values.map { "\(column) = \($0)" }.joined(separator: " OR ") + ")"
        }
    }

    static func lockKey(_ schema: String) -> Int32 {
        schema.utf8.reduce(Int32(5381)) { ($0 &* 33) &+ Int32($1) }
    }
}
