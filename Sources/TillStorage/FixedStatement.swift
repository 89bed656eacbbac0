import SQLKit
import Synchronization

/// A statement whose text never changes, only its values: its text is written once for each engine and kept, and a
/// run hands the engine that text and the values.
///
/// A statement written as sql-kit's `SQLQueryString` (`db.raw("… \(bind: value) …")`) is built anew on every run, one
/// fragment for each piece of text and each value, and then written out piece by piece; its text is the same every
/// time. On the hot path that building and writing was about 5% of the CPU of taking in a purchase, nearly all of it
/// while the one SQLite writer was held (perf over `till bench submissions --rate 1000`, docs/benchmarks.md).
///
/// The text numbers its values `?1` … `?N`, SQLite's own form; a value may appear more than once. Each engine gets
/// them in its own form (PostgreSQL's `$1` … `$N`), written once. A `?` inside a quoted string or name or a comment is
/// text, and so is one without a number.
///
/// ```swift
/// static let alias = FixedStatement("SELECT alias_of FROM srv_customers WHERE bundle_id = ?1 AND customer_id = ?2")
/// let row = try await db.first(Self.alias(bundleId, customerId))
/// ```
public final class FixedStatement: Sendable {
    private let sqlite: String
    /// PostgreSQL's text, its values written `$1` … `$N` (SQLite's own form is `?N`, the text as written).
    private let postgresText: String
    /// The values a run binds: the highest `?N`.
    public let valueCount: Int

    /// A statement with the same text on every engine.
    public convenience init(_ text: String) {
        self.init(sqlite: text, postgres: text)
    }

    /// A statement written for each engine (a plan SQLite needs told, a lock PostgreSQL needs): the same values,
    /// `?1` … `?N`, in both.
    public init(sqlite: String, postgres: String) {
        let (sqliteCount, sqliteNumbers) = Self.parameters(of: sqlite)
        let (postgresCount, postgresNumbers) = Self.parameters(of: postgres)
        precondition(sqliteCount == postgresCount, "the engines' texts take different values: \(sqlite)")
        // Each of 1…N appears: PostgreSQL cannot type a parameter it never sees.
        precondition(sqliteNumbers == Set(1...max(1, sqliteCount)) || sqliteCount == 0, "a value unused in: \(sqlite)")
        precondition(postgresNumbers == sqliteNumbers, "the engines' texts use different values: \(postgres)")
        self.sqlite = sqlite
        self.postgresText = Self.placeholders(in: postgres) { "$\($0)" }
        self.valueCount = sqliteCount
    }

    /// A run of the statement with `values`, in the order of their numbers (`?1` first); nil binds NULL.
    public func callAsFunction(_ values: (any Encodable & Sendable)?...) -> any SQLExpression {
        with(values)
    }

    /// A run of the statement with `values`, in the order of their numbers (`?1` first); nil binds NULL.
    public func with(_ values: [(any Encodable & Sendable)?]) -> any SQLExpression {
        precondition(values.count == valueCount, "\(values.count) values for \(valueCount) parameters: \(sqlite)")
        return Run(statement: self, values: values)
    }

    /// The text `dialect` runs: SQLite's as written, PostgreSQL's with `$N` (FixedStatementTests checks what each
    /// gets). Till runs on these two engines alone (`DatabaseConfiguration`).
    func text(for dialect: any SQLDialect) -> String {
        switch dialect.name {
        case "sqlite": return sqlite
        case "postgresql": return postgresText
        default: preconditionFailure("a FixedStatement on \(dialect.name), which Till does not run on")
        }
    }

    private struct Run: SQLExpression {
        let statement: FixedStatement
        let values: [(any Encodable & Sendable)?]

        func serialize(to serializer: inout SQLSerializer) {
            // Placeholders are numbered from the statement's first value: this is a whole statement.
            precondition(serializer.binds.isEmpty, "a FixedStatement inside another statement")
            serializer.write(statement.text(for: serializer.dialect))
            serializer.binds.reserveCapacity(values.count)
            for value in values { serializer.binds.append(value ?? SQLNull()) }
        }
    }

    /// NULL as a bound value.
    struct SQLNull: Encodable, Sendable {
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        }
    }

    /// `text` with each `?N` outside quotes replaced by `placeholder(N)`.
    static func placeholders(in text: String, _ placeholder: (Int) -> String) -> String {
        var result = ""
        scan(text) { piece in
            switch piece {
            case .text(let text): result += text
            case .parameter(let number): result += placeholder(number)
            }
        }
        return result
    }

    /// The highest `?N` of `text`, and every N it uses.
    static func parameters(of text: String) -> (count: Int, numbers: Set<Int>) {
        var numbers: Set<Int> = []
        scan(text) { piece in
            if case .parameter(let number) = piece { numbers.insert(number) }
        }
        return (numbers.max() ?? 0, numbers)
    }

    private enum Piece {
        case text(Substring)
        case parameter(Int)
    }

    /// Walks `text` as pieces of text and `?N` parameters. Inside '…' and "…", and in `--` and `/* */` comments,
    /// everything is text, and so is a `?` without a number (PostgreSQL's JSON operators).
    private static func scan(_ text: String, _ each: (Piece) -> Void) {
        /// Where the text that `at` opens ends (after its closing mark); nil when `at` opens nothing.
        func skipped(at index: String.Index) -> String.Index? {
            let rest = text[index...]
            let close: String
            if rest.hasPrefix("'") || rest.hasPrefix("\"") {
                close = String(rest.prefix(1))
            } else if rest.hasPrefix("--") {
                close = "\n"
            } else if rest.hasPrefix("/*") {
                close = "*/"
            } else {
                return nil
            }
            let from = text.index(index, offsetBy: close == "*/" ? 2 : 1)
            return text[from...].firstRange(of: close)?.upperBound ?? text.endIndex
        }
        var start = text.startIndex
        var index = text.startIndex
        while index < text.endIndex {
            if let end = skipped(at: index) {
                index = end
                continue
            }
            var end = text.index(after: index)
            guard text[index] == "?" else {
                index = end
                continue
            }
            while end < text.endIndex, text[end].isASCII, text[end].isNumber { end = text.index(after: end) }
            guard let number = Int(text[text.index(after: index)..<end]) else {
                index = end
                continue
            }
            each(.text(text[start..<index]))
            each(.parameter(number))
            start = end
            index = end
        }
        each(.text(text[start..<text.endIndex]))
    }
}

extension SQLDatabase {
    /// The first row `statement` returns, if any.
    public func first(_ statement: any SQLExpression) async throws -> (any SQLRow)? {
        let first = Mutex<(any SQLRow)?>(nil)
        try await execute(sql: statement) { row in
            first.withLock { if $0 == nil { $0 = row } }
        }
        return first.withLock { $0 }
    }

    /// Every row `statement` returns.
    public func all(_ statement: any SQLExpression) async throws -> [any SQLRow] {
        let rows = Mutex<[any SQLRow]>([])
        try await execute(sql: statement) { row in rows.withLock { $0.append(row) } }
        return rows.withLock { $0 }
    }
}
