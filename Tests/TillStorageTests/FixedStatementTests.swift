import Foundation
import SQLKit
import Testing
import TillStorage
import TillTestSupport

/// Statements whose text is written once and kept: `FixedStatement`, and the kept texts of `RecordStatements`' rows.
@Suite(.sharingTheMachine, .serialized)
struct FixedStatementTests {
    private static let insert = FixedStatement("INSERT INTO fixed_notes (id, body, copy_of_id) VALUES (?1, ?2, ?1)")
    private static let read = FixedStatement(
        "SELECT id, body, copy_of_id, 'a ?9 in quotes' AS note, \"id\" AS quoted FROM fixed_notes WHERE id = ?1"
    )
    /// A comment is text, an apostrophe in it included, and so is a `?` in it.
    private static let commented = FixedStatement(
        """
        SELECT ?1 AS a, -- the first's, not ?3
          /* nor ?4 */ ?2 AS b
        """
    )
    private static let engine = FixedStatement(
        sqlite: "SELECT 'sqlite' AS engine, ?1 + 1 AS next",
        postgres: "SELECT 'postgres' AS engine, ?1::bigint + 1 AS next"
    )

    private func fresh(_ configuration: DatabaseConfiguration) async throws -> TillDatabase {
        let database = try await TillDatabase.open(configuration)
        try await database.sql.raw("DROP TABLE IF EXISTS fixed_notes").run()
        try await database.sql.raw("CREATE TABLE fixed_notes (id TEXT PRIMARY KEY, body TEXT, copy_of_id TEXT)").run()
        return database
    }

    @Test(arguments: TestDatabases.all)
    func aValueIsBoundByItsNumberOnEveryEngineAndQuotedTextIsText(_ configuration: DatabaseConfiguration) async throws {
        let database = try await fresh(configuration)
        try await database.transaction { db in
            try await db.run(Self.insert("a", "first"))
            try await db.run(Self.insert("b", nil))
        }
        let a = try #require(try await database.sql.first(Self.read("a")))
        #expect(try a.decode(column: "body", as: String?.self) == "first")
        #expect(try a.decode(column: "copy_of_id", as: String.self) == "a")
        #expect(try a.decode(column: "note", as: String.self) == "a ?9 in quotes")
        #expect(try a.decode(column: "quoted", as: String.self) == "a")
        let b = try #require(try await database.sql.first(Self.read("b")))
        #expect(try b.decode(column: "body", as: String?.self) == nil)
        #expect(try await database.sql.all(Self.read("c")).isEmpty)

        let postgres = database.engine == .postgres
        let row = try #require(try await database.sql.first(Self.engine(Int64(41))))
        #expect(try row.decode(column: "engine", as: String.self) == (postgres ? "postgres" : "sqlite"))
        #expect(try row.decode(column: "next", as: Int64.self) == 42)

        let commented = try #require(try await database.sql.first(Self.commented("one", "two")))
        #expect(try commented.decode(column: "a", as: String.self) == "one")
        #expect(try commented.decode(column: "b", as: String.self) == "two")
        #expect(Self.commented.valueCount == 2)

        // Each engine gets its own placeholders, once per value however often the text names it.
        let (sql, binds) = database.sql.serialize(Self.insert("c", "third"))
        #expect(
            sql == "INSERT INTO fixed_notes (id, body, copy_of_id) VALUES (\(postgres ? "$1, $2, $1" : "?1, ?2, ?1"))"
        )
        #expect(binds.count == 2)
        #expect(Self.read.valueCount == 1 && Self.insert.valueCount == 2)
        try await database.sql.raw("DROP TABLE fixed_notes").run()
        try await database.shutdown()
    }

    /// A row's INSERT and UPDATE keep their text by which values are NULL: a NULL is written into the text, so a row
    /// with another value NULL has another text.
    @Test(arguments: TestDatabases.all)
    func aRowsTextIsKeptForItsNullsAlone(_ configuration: DatabaseConfiguration) async throws {
        let database = try await fresh(configuration)
        let columns = ["id", "body", "copy_of_id"]
        let rows: [[(any Encodable & Sendable)?]] = [
            ["a", nil, "x"], ["b", "second", nil], ["c", nil, "y"], ["d", "fourth", "z"], ["e", nil, nil],
        ]
        for row in rows {
            try await database.sql.run(RecordStatements.insert(into: "fixed_notes", columns: columns, rows: [row]))
        }
        try await database.sql.run(
            RecordStatements.update("fixed_notes", columns: columns, values: ["a", "now", nil], keys: ["id"])
        )
        try await database.sql.run(
            RecordStatements.update("fixed_notes", columns: columns, values: ["d", nil, "w"], keys: ["id"])
        )
        let stored = try await database.sql.raw("SELECT id, body, copy_of_id FROM fixed_notes ORDER BY id").all().map {
            [
                try $0.decode(column: "id", as: String.self),
                try $0.decode(column: "body", as: String?.self) ?? "NULL",
                try $0.decode(column: "copy_of_id", as: String?.self) ?? "NULL",
            ]
        }
        #expect(
            stored == [
                ["a", "now", "NULL"], ["b", "second", "NULL"], ["c", "NULL", "y"], ["d", "NULL", "w"],
                ["e", "NULL", "NULL"],
            ]
        )
        // Two rows at once, then one: not the text of either.
        try await database.sql.run(
            RecordStatements.insert(
                into: "fixed_notes",
                columns: columns,
                rows: [["f", "sixth", nil], ["g", nil, "v"]]
            )
        )
        try await database.sql.run(
            RecordStatements.insert(into: "fixed_notes", columns: columns, rows: [["h", "eighth", "u"]])
        )
        #expect(
            try await database.sql.raw("SELECT COUNT(*) AS n FROM fixed_notes").first()?.decode(
                column: "n",
                as: Int.self
            ) == 8
        )
        try await database.sql.raw("DROP TABLE fixed_notes").run()
        try await database.shutdown()
    }
}
