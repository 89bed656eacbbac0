import Logging
import NIOCore
import SQLKit
import SQLiteKit
import SQLiteNIO

/// sql-kit's view of the SQLite connections: each statement runs on a connection borrowed from the pool, or
/// on the one a session holds, on the calling thread (see `SQLiteHandle`).
struct DirectSQLiteDatabase: AsyncSQLDatabase {
    enum Target {
        /// A connection borrowed for each statement. A statement that may write takes the write lock first,
        /// like a transaction: statements run on the caller's thread, and one waiting in SQLite's busy
        /// handler would hold that thread while the transaction it waits for needs a thread to commit.
        case pool(SQLiteConnectionPool, AsyncLock)
        case session(SQLiteHandle)
    }

    let target: Target
    let logger: Logger
    let eventLoop: any EventLoop
    let tap: StatementTap
    var dialect: any SQLDialect { SQLiteDialect() }
    var version: (any SQLDatabaseReportedVersion)? { nil }
    var queryLogLevel: Logger.Level? { nil }
    private static let encoder = SQLiteDataEncoder()
    private static let decoder = SQLiteDataDecoder()

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        let (sql, rawBinds) = serialize(query)
        let place = tap.heard(sql, rawBinds)
        let binds = try rawBinds.map(Self.sqliteData)
        let run: @Sendable (SQLiteHandle) throws -> SQLiteHandle.Work = { handle in
            try handle.execute(sql, binds) { columns, values in
                onRow(DirectSQLiteRow(columns: columns, values: values, decoder: Self.decoder))
            }
        }
        let work: SQLiteHandle.Work
        switch target {
        case .session(let handle): work = try run(handle)
        case .pool(let pool, let writeLock):
            if Self.onlyReads(sql) {
                work = try await pool.withConnection { try run($0) }
            } else {
                // The lock before the connection, as `transaction` does: the other order can leave every
                // connection held by a waiter while the lock's holder waits for a connection.
                work = try await writeLock.withLock { try await pool.withConnection { try run($0) } }
            }
        }
        if let place { tap.ran(place, work) }
    }

    /// A bound value as SQLite takes it. Hand-written for a measured cost: sqlite-kit's encoder asks the runtime
    /// whether each value conforms to `SQLiteDataConvertible` (a conformance lookup a value) and sends a NULL through
    /// an `Encoder`, 1.4% of the intake's CPU in a profile at 1,000 purchases a second, all of it while the writer's
    /// lock is held. The values Till binds are nearly all strings and integers: those are told apart by their type,
    /// into the same `SQLiteData` sqlite-kit makes of them; anything else goes to sqlite-kit's encoder.
    static func sqliteData(_ value: any Encodable) throws -> SQLiteData {
        switch value {
        case let text as String: .text(text)
        case let number as Int64: .integer(Int(number))
        case let number as Int: .integer(number)
        case let flag as Bool: .integer(flag ? 1 : 0)
        case is FixedStatement.SQLNull: .null
        default: try encoder.encode(value)
        }
    }

    /// A plain SELECT (sql-kit's and Till's own start with the word); anything else counts as a write.
    static func onlyReads(_ sql: String) -> Bool {
        var prefix = sql.utf8.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") }.prefix(7).makeIterator()
        for expected in "SELECT ".utf8 {
            guard let byte = prefix.next(), byte & 0xDF == expected & 0xDF else { return false }
        }
        return true
    }

    /// A session's `SQLiteHandle.totalChanges`; nil outside a session.
    var totalChanges: Int64? {
        guard case .session(let handle) = target else { return nil }
        return handle.totalChanges
    }

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        switch target {
        case .session: return try await closure(self)
        case .pool(let pool, _):
            return try await pool.withConnection { handle in
                try await closure(
                    DirectSQLiteDatabase(target: .session(handle), logger: logger, eventLoop: eventLoop, tap: tap)
                )
            }
        }
    }
}

/// A row of `DirectSQLiteDatabase`: strings and integers read by their type, anything else by sqlite-kit's decoder.
struct DirectSQLiteRow: SQLRow {
    let columns: SQLiteHandle.Columns
    let values: [SQLiteData]
    let decoder: SQLiteDataDecoder

    var allColumns: [String] { columns.names }

    func contains(column: String) -> Bool { columns.index[column] != nil }

    func decodeNil(column: String) throws -> Bool {
        guard let offset = columns.index[column] else { return true }
        if case .null = values[offset] { return true }
        return false
    }

    func decode<D: Decodable>(column: String, as: D.Type) throws -> D {
        guard let offset = columns.index[column] else {
            throw SQLiteFailure(code: 1, message: "no column \(column) in the row (\(columns.names))")
        }
        return try Self.decode(D.self, from: values[offset], decoder: decoder)
    }

    /// `value` as `D`. Hand-written for the cost `DirectSQLiteDatabase.sqliteData` names, the other way: sqlite-kit's
    /// decoder looks up whether `D` conforms to `SQLiteDataConvertible` for every column it reads, and the rows of a
    /// purchase's transaction are read while the writer's lock is held. Text read as a string and an integer read as
    /// an integer are taken as they are, as sqlite-kit's decoder takes them; anything else goes to that decoder.
    static func decode<D: Decodable>(_: D.Type, from value: SQLiteData, decoder: SQLiteDataDecoder) throws -> D {
        switch value {
        case .text(let text) where D.self == String.self: text as! D
        case .integer(let number) where D.self == Int64.self: Int64(number) as! D
        case .integer(let number) where D.self == Int.self: number as! D
        default: try decoder.decode(D.self, from: value)
        }
    }
}
