import SQLKit
import Synchronization

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
        let match = try keys.map { key in
            guard let column = columns.first(where: { $0.0 == key }) else {
                throw MissingKeyColumn(table: table, column: key)
            }
            return column
        }
        return Update(table: table, set: columns.filter { !keys.contains($0.0) }, keys: match)
    }

    /// `INSERT INTO table (columns…) VALUES (…), (…), …`: rows given as their values in the columns' order, nil for
    /// NULL. For records written many at a time on a hot path, where encoding each through Codable (sql-kit's
    /// `models(_:)`) cost more CPU time than running the statement: a webhook dispatch (docs/benchmarks.md).
    public static func insert(
        into table: String,
        columns: [String],
        rows: [[(any Encodable & Sendable)?]]
    ) -> any SQLExpression {
        assert(rows.allSatisfy { $0.count == columns.count })
        return Rows(table: table, columns: columns, rows: rows)
    }

    /// `UPDATE table SET column = value, … WHERE key = value AND …`: a row given as its values in the columns'
    /// order, nil for NULL, every column but the keys set. For a record a hot path writes (a ledger row), where encoding
    /// it through Codable cost more CPU time than running the statement.
    public static func update(
        _ table: String,
        columns: [String],
        values: [(any Encodable & Sendable)?],
        keys: [String]
    ) -> any SQLExpression {
        assert(columns.count == values.count && keys.allSatisfy(columns.contains))
        return RowUpdate(table: table, columns: columns, values: values, keys: keys)
    }

    private static func name(_ name: String, _ serializer: inout SQLSerializer) {
        assert(
            name.utf8.allSatisfy { $0 == UInt8(ascii: "_") || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) }
        )
        serializer.write("\"" + name + "\"")
    }

    /// Writes `each` for every column, with `separator` between them.
    private static func list(
        _ columns: [(String, any SQLExpression)],
        separator: String,
        _ serializer: inout SQLSerializer,
        _ each: ((String, any SQLExpression), inout SQLSerializer) -> Void
    ) {
        for (offset, column) in columns.enumerated() {
            if offset > 0 { serializer.write(separator) }
            each(column, &serializer)
        }
    }

    private struct Insert: SQLExpression {
        let table: String
        let columns: [(String, any SQLExpression)]

        func serialize(to serializer: inout SQLSerializer) {
            serializer.write("INSERT INTO ")
            RecordStatements.name(table, &serializer)
            serializer.write(" (")
            RecordStatements.list(columns, separator: ", ", &serializer) { RecordStatements.name($0.0, &$1) }
            serializer.write(") VALUES (")
            RecordStatements.list(columns, separator: ", ", &serializer) { $0.1.serialize(to: &$1) }
            serializer.write(")")
        }
    }

    private struct Rows: SQLExpression {
        let table: String
        let columns: [String]
        let rows: [[(any Encodable & Sendable)?]]

        func serialize(to serializer: inout SQLSerializer) {
            let shape = Shape.of(serializer, table: table, columns: columns, keys: nil, rows: rows.count) { nulls in
                var bit: UInt64 = 1
                for row in rows {
                    for value in row {
                        if value == nil { nulls |= bit }
                        bit <<= 1
                    }
                }
            }
            guard let shape, let text = RecordStatements.texts.withLock({ $0[shape] }) else {
                return RecordStatements.keep(shape, &serializer, writing: write)
            }
            serializer.write(text)
            for row in rows {
                for value in row { if let value { serializer.binds.append(value) } }
            }
        }

        private func write(to serializer: inout SQLSerializer) {
            serializer.write("INSERT INTO ")
            RecordStatements.name(table, &serializer)
            serializer.write(" (")
            for (offset, column) in columns.enumerated() {
                if offset > 0 { serializer.write(", ") }
                RecordStatements.name(column, &serializer)
            }
            serializer.write(") VALUES ")
            for (index, row) in rows.enumerated() {
                serializer.write(index == 0 ? "(" : ", (")
                for (offset, value) in row.enumerated() {
                    if offset > 0 { serializer.write(", ") }
                    if let value { serializer.write(bind: value) } else { serializer.write("NULL") }
                }
                serializer.write(")")
            }
        }
    }

    /// `UPDATE table SET column = value, … WHERE key = value AND …` of a row given as its values.
    private struct RowUpdate: SQLExpression {
        let table: String
        let columns: [String]
        let values: [(any Encodable & Sendable)?]
        let keys: [String]

        func serialize(to serializer: inout SQLSerializer) {
            let shape = Shape.of(serializer, table: table, columns: columns, keys: keys, rows: 1) { nulls in
                for (offset, value) in values.enumerated() where value == nil { nulls |= 1 << UInt64(offset) }
            }
            guard let shape, let text = RecordStatements.texts.withLock({ $0[shape] }) else {
                return RecordStatements.keep(shape, &serializer, writing: write)
            }
            serializer.write(text)
            // In the order the text binds them: the columns set, then the keys.
            for (column, value) in zip(columns, values) where !keys.contains(column) {
                if let value { serializer.binds.append(value) }
            }
            for key in keys {
                if let value = zip(columns, values).first(where: { $0.0 == key })?.1 { serializer.binds.append(value) }
            }
        }

        private func write(to serializer: inout SQLSerializer) {
            let pairs = zip(columns, values).map { column, value -> (String, any SQLExpression) in
                (column, value.map { SQLBind($0) } ?? SQLLiteral.null)
            }
            Update(
                table: table,
                set: pairs.filter { !keys.contains($0.0) },
                keys: keys.compactMap { key in pairs.first { $0.0 == key } }
            ).serialize(to: &serializer)
        }
    }

    /// What decides the text of a row's INSERT or UPDATE: the engine, the table, the columns (and the keys an
    /// UPDATE matches on), the rows, and which values are NULL (written as NULL, not bound).
    private struct Shape: Hashable {
        let dialect: String
        let table: String
        let columns: [String]
        let keys: [String]?
        let rows: Int
        /// Bit n set: the n-th value, row after row, is NULL.
        let nulls: UInt64

        /// The shape of a whole statement of at most 64 values; nil for any other, whose text is not kept.
        /// Placeholders are numbered from a statement's first value, so only a whole statement's text is kept.
        static func of(
            _ serializer: SQLSerializer,
            table: String,
            columns: [String],
            keys: [String]?,
            rows: Int,
            nulls: (inout UInt64) -> Void
        ) -> Shape? {
            guard serializer.sql.isEmpty, serializer.binds.isEmpty, rows * columns.count <= 64 else { return nil }
            var mask: UInt64 = 0
            nulls(&mask)
            return Shape(
                dialect: serializer.dialect.name,
                table: table,
                columns: columns,
                keys: keys,
                rows: rows,
                nulls: mask
            )
        }

        /// The names are not hashed, only compared (equal shapes hash alike): a table's statements have the same
        /// columns, so hashing the table and the counts tells shapes apart as well, for less work.
        func hash(into hasher: inout Hasher) {
            hasher.combine(table)
            hasher.combine(columns.count)
            hasher.combine(rows)
            hasher.combine(nulls)
        }
    }

    /// The texts written so far, by shape. A record's statement has the same text whenever the same of its values
    /// are NULL, so it is written once and kept: writing it value by value, every time, was 2% of the CPU of taking
    /// in a purchase, all of it while the one SQLite writer was held (perf over `till bench submissions`).
    private static let texts = Mutex<[Shape: String]>([:])
    /// Shapes kept at most.
    private static let maximumTexts = 256

    /// Writes the statement with `writing`, and keeps its text under `shape` (when it has one).
    private static func keep(_ shape: Shape?, _ serializer: inout SQLSerializer, writing: (inout SQLSerializer) -> Void)
    {
        writing(&serializer)
        guard let shape else { return }
        let text = serializer.sql
        texts.withLock { texts in
            if texts.count >= maximumTexts { texts = [:] }
            texts[shape] = text
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
            RecordStatements.list(set, separator: ", ", &serializer, Self.assignment)
            serializer.write(" WHERE ")
            RecordStatements.list(keys, separator: " AND ", &serializer, Self.assignment)
        }

        /// `"name" = value`.
        private static func assignment(_ column: (String, any SQLExpression), _ serializer: inout SQLSerializer) {
            RecordStatements.name(column.0, &serializer)
            serializer.write(" = ")
            column.1.serialize(to: &serializer)
        }
    }
}

/// An UPDATE asked to match on a column its record does not have.
public struct MissingKeyColumn: Error, CustomStringConvertible {
    public let table: String
    public let column: String
    public var description: String { "a record of \(table) has no column \(column) to match on" }
}

/// Columns read by hand, for the rows a hot path reads many of (Codable's keyed decoding of each cost more CPU time than
/// the statement that read it).
extension SQLRow {
    /// A column that may be NULL.
    public func optional<Value: Decodable>(_ column: String, as type: Value.Type) throws -> Value? {
        try decodeNil(column: column) ? nil : decode(column: column, as: Value.self)
    }

    /// A column holding an enumeration's raw value.
    public func enumeration<Value: RawRepresentable>(_ column: String, as type: Value.Type) throws -> Value
    where Value.RawValue == String {
        try Self.value(of: try decode(column: column, as: String.self), in: column, as: Value.self)
    }

    /// A column that may be NULL holding an enumeration's raw value.
    public func optionalEnumeration<Value: RawRepresentable>(_ column: String, as type: Value.Type) throws -> Value?
    where Value.RawValue == String {
        try optional(column, as: String.self).map { try Self.value(of: $0, in: column, as: Value.self) }
    }

    private static func value<Value: RawRepresentable>(of raw: String, in column: String, as type: Value.Type) throws
        -> Value
    where Value.RawValue == String {
        guard let value = Value(rawValue: raw) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: [], debugDescription: "\(column) holds \(raw), not a \(Value.self)")
            )
        }
        return value
    }
}

extension SQLDatabase {
    /// Runs a statement that returns no rows.
    public func run(_ statement: any SQLExpression) async throws {
        try await execute(sql: statement) { _ in }
    }
}
