import SQLKit

/// INSERT and UPDATE statements for a Codable record, with its properties as columns.
///
/// The same statements as sql-kit's `insert(into:).model(_:)` and `update(_:).set(model:)`, serialised
/// cheaply: names are written between double quotes as they are (they are the code's own snake_case property
/// names, never input), where sql-kit builds an identifier expression for each and escapes it, which cost
/// about 9% of a purchase's CPU time.
public enum RecordStatements {
    /// `INSERT INTO table (columns…) VALUES (values…)`.
    public static func insert(
        into table: String,
        _ record: some Encodable,
        with encoder: SQLQueryEncoder
    ) throws -> any SQLExpression {
        Insert(table: table, columns: try encoder.encode(record))
    }

    /// `UPDATE table SET column = value, … WHERE key = value AND …`, every property but the keys set.
    public static func update(
        _ table: String,
        _ record: some Encodable,
        keys: [String],
        with encoder: SQLQueryEncoder
    ) throws -> any SQLExpression {
        let columns = try encoder.encode(record)
        let set = columns.filter { !keys.contains($0.0) }
        let match = keys.map { key in (key, columns.first { $0.0 == key }?.1 ?? SQLLiteral.null) }
        return Update(table: table, set: set, keys: match)
    }

    private static func name(_ name: String, _ serializer: inout SQLSerializer) {
        assert(
            name.utf8.allSatisfy { $0 == UInt8(ascii: "_") || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) }
        )
        serializer.write("\"" + name + "\"")
    }

    private struct Insert: SQLExpression {
        let table: String
        let columns: [(String, any SQLExpression)]

        func serialize(to serializer: inout SQLSerializer) {
            serializer.write("INSERT INTO ")
            RecordStatements.name(table, &serializer)
            serializer.write(" (")
            for (offset, column) in columns.enumerated() {
                if offset > 0 { serializer.write(", ") }
                RecordStatements.name(column.0, &serializer)
            }
            serializer.write(") VALUES (")
            for (offset, column) in columns.enumerated() {
                if offset > 0 { serializer.write(", ") }
                column.1.serialize(to: &serializer)
            }
            serializer.write(")")
        }
    }

    private struct Update: SQLExpression {
        let table: String
        let set: [(String, any SQLExpression)]
        let keys: [(String, any SQLExpression)]

        func serialize(to serializer: inout SQLSerializer) {
            serializer.write("UPDATE ")
            RecordStatements.name(table, &serializer)
            serializer.write(" SET ")
            for (offset, column) in set.enumerated() {
                if offset > 0 { serializer.write(", ") }
                RecordStatements.name(column.0, &serializer)
                serializer.write(" = ")
                column.1.serialize(to: &serializer)
            }
            serializer.write(" WHERE ")
            for (offset, key) in keys.enumerated() {
                if offset > 0 { serializer.write(" AND ") }
                RecordStatements.name(key.0, &serializer)
                serializer.write(" = ")
                key.1.serialize(to: &serializer)
            }
        }
    }
}

extension SQLDatabase {
    /// Runs a statement that returns no rows.
    public func run(_ statement: any SQLExpression) async throws {
        try await execute(sql: statement) { _ in }
    }
}
