import Foundation
import NIOCore
import SQLiteNIO
import Synchronization
import VaporCSQLite

/// One SQLite connection, driven straight through the C library that sqlite-nio builds and links.
///
/// sqlite-nio runs every statement as a job on a thread pool, then completes a promise on an event loop, then
/// resumes the waiting task: three thread hops a statement, and one more hop for each row returned. A
/// submission makes about fourteen statements, so the hops cost more than the SQL (the kernel's scheduler was
/// a third of a profile). Here a statement runs on the calling thread, prepared once per connection and kept.
/// Each statement takes microseconds: WAL mode, `synchronous = NORMAL`, and one writer at a time in this
/// process, so a step only waits when another process holds the lock (the busy timeout bounds that).
///
/// It is the same copy of SQLite as sqlite-nio's, on purpose: two copies of SQLite in one process that open the
/// same file can corrupt it (their POSIX locks do not see each other).
///
/// Not thread-safe: the pool lends a handle to one borrower at a time.
final class SQLiteHandle: @unchecked Sendable {
    private var raw: OpaquePointer?
    private var statements: [String: PreparedStatement] = [:]
    private static let maximumCachedStatements = 256
    /// Told of the log's length after each commit (kept alive as long as SQLite may call it).
    private var walObserver: WALCheckpointer?

    /// The column names of a prepared statement, looked up by name for each row it returns.
    final class Columns: Sendable {
        let names: [String]
        let index: [String: Int]

        init(_ names: [String]) {
            self.names = names
            var index: [String: Int] = [:]
            // The first column of a name wins, as in sqlite-nio.
            for (offset, name) in names.enumerated().reversed() { index[name] = offset }
            self.index = index
        }
    }

    private struct PreparedStatement {
        let pointer: OpaquePointer
        let columns: Columns
    }

    /// Opens (creating when missing) the database file at `path`.
    init(path: String) throws {
        Self.initializeLibrary
        var handle: OpaquePointer?
        let flags =
            SQLITE_OPEN_CREATE | SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
            | SQLITE_OPEN_EXRESCODE
        let status = sqlite_nio_sqlite3_open_v2(path, &handle, flags, nil)
        guard status == SQLITE_OK, let handle else {
            let message = handle.flatMap { sqlite_nio_sqlite3_errmsg($0) }.map { String(cString: $0) } ?? "no handle"
            if let handle { sqlite_nio_sqlite3_close_v2(handle) }
            throw SQLiteFailure(code: status, message: "cannot open \(path): \(message)")
        }
        raw = handle
    }

    /// `sqlite3_initialize` is not safe to race with the first `open`; a static initialiser runs it once.
    private static let initializeLibrary: Void = { _ = sqlite_nio_sqlite3_initialize() }()

    deinit { close() }

    /// Finalises every statement and closes the connection.
    func close() {
        for statement in statements.values { sqlite_nio_sqlite3_finalize(statement.pointer) }
        statements = [:]
        if let raw { sqlite_nio_sqlite3_close_v2(raw) }
        raw = nil
        walObserver = nil
    }

    /// Reports the log's length to `checkpointer` after each commit; this also turns SQLite's automatic
    /// checkpoint off for this connection (one WAL hook per connection).
    func setWALHook(_ checkpointer: WALCheckpointer) {
        guard let raw else { return }
        walObserver = checkpointer
        sqlite_nio_sqlite3_wal_hook(
            raw,
            { context, connection, schema, pages in
                guard let context else { return SQLITE_OK }
                Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue()
                    .committed(pages: pages, connection: connection, schema: schema)
                return SQLITE_OK
            },
            Unmanaged.passUnretained(checkpointer).toOpaque()
        )
    }

    /// Copies what it can of the log into the database file without waiting for readers or writers; returns
    /// the pages copied so far, from the log's start.
    @discardableResult
    func checkpointPassive() -> Int32? {
        guard let raw else { return nil }
        var log: Int32 = 0
        var copied: Int32 = 0
        let status = sqlite_nio_sqlite3_wal_checkpoint_v2(raw, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &copied)
        return status == SQLITE_OK && copied >= 0 ? copied : nil
    }

    /// Rows inserted, updated or deleted on this connection since it opened (`sqlite3_total_changes64`), counting
    /// those rolled back since.
    var totalChanges: Int64 {
        guard let raw else { return 0 }
        return sqlite_nio_sqlite3_total_changes64(raw)
    }

    /// What a statement's run asked of SQLite, counted by SQLite itself (`sqlite3_stmt_status`): the same for the
    /// same data on any machine, so tests can hold a piece of work to a budget of it (`StatementTap`).
    struct Work: Sendable {
        /// The virtual machine's instructions run, each row visited among them (`SQLITE_STMTSTATUS_VM_STEP`).
        var steps: Int
        /// Steps forward through a table read whole (`SQLITE_STMTSTATUS_FULLSCAN_STEP`).
        var fullScanSteps: Int
    }

    /// Runs one statement with its binds, calling `onRow` for each row it returns, on this thread; answers what the
    /// run asked of SQLite (two counters reset and read: nanoseconds).
    @discardableResult
    func execute(_ sql: String, _ binds: [SQLiteData], _ onRow: (Columns, [SQLiteData]) throws -> Void) throws
        -> Work
    {
        guard let raw else { throw SQLiteFailure(code: SQLITE_MISUSE, message: "the connection is closed") }
        let statement = try prepared(sql, raw)
        let pointer = statement.pointer
        // Resetting ends the statement's read of the database. The bindings are not cleared: each run binds
        // every parameter again, and clearing them makes SQLite prepare again any statement whose plan depends
        // on a bound value (ORDER BY with LIMIT, aggregates), which cost 3% of a submission.
        defer { sqlite_nio_sqlite3_reset(pointer) }
        guard sqlite_nio_sqlite3_bind_parameter_count(pointer) == Int32(binds.count) else {
            throw SQLiteFailure(
                code: SQLITE_RANGE,
                message: "\(binds.count) values for the parameters of: \(sql.prefix(200))"
            )
        }
        for (offset, value) in binds.enumerated() {
            try check(bind(value, at: Int32(offset + 1), to: pointer), sql)
        }
        let width = statement.columns.names.count
        // The counters go on across runs of a kept statement (a run that failed left its count): reset here, read at
        // the end, each run counts its own.
        _ = sqlite_nio_sqlite3_stmt_status(pointer, SQLITE_STMTSTATUS_VM_STEP, 1)
        _ = sqlite_nio_sqlite3_stmt_status(pointer, SQLITE_STMTSTATUS_FULLSCAN_STEP, 1)
        while true {
            let status = sqlite_nio_sqlite3_step(pointer)
            if status == SQLITE_DONE {
                return Work(
                    steps: Int(sqlite_nio_sqlite3_stmt_status(pointer, SQLITE_STMTSTATUS_VM_STEP, 0)),
                    fullScanSteps: Int(sqlite_nio_sqlite3_stmt_status(pointer, SQLITE_STMTSTATUS_FULLSCAN_STEP, 0))
                )
            }
            guard status == SQLITE_ROW else { throw failure(status, sql) }
            var values: [SQLiteData] = []
            values.reserveCapacity(width)
            for column in 0..<Int32(width) { values.append(value(at: column, of: pointer)) }
            try onRow(statement.columns, values)
        }
    }

    private func prepared(_ sql: String, _ raw: OpaquePointer) throws -> PreparedStatement {
        if let statement = statements[sql] { return statement }
        var pointer: OpaquePointer?
        let status = sqlite_nio_sqlite3_prepare_v3(raw, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &pointer, nil)
        guard status == SQLITE_OK, let pointer else { throw failure(status, sql) }
        let count = sqlite_nio_sqlite3_column_count(pointer)
        let names = (0..<count).map { column in
            sqlite_nio_sqlite3_column_name(pointer, column).map { String(cString: $0) } ?? ""
        }
        let statement = PreparedStatement(pointer: pointer, columns: Columns(names))
        if statements.count >= Self.maximumCachedStatements {
            // Statements built from data (an IN list of every length) would grow the cache without end.
            for old in statements.values { sqlite_nio_sqlite3_finalize(old.pointer) }
            statements = [:]
        }
        statements[sql] = statement
        return statement
    }

    private func bind(_ value: SQLiteData, at position: Int32, to pointer: OpaquePointer) -> Int32 {
        switch value {
        case .integer(let integer):
            return sqlite_nio_sqlite3_bind_int64(pointer, position, Int64(integer))
        case .float(let double):
            return sqlite_nio_sqlite3_bind_double(pointer, position, double)
        case .text(let text):
            // A native string is passed without a copy (Swift's String-to-C-string bridging); SQLite copies it.
            return sqlite_nio_sqlite3_bind_text64(
                pointer,
                position,
                text,
                UInt64(text.utf8.count),
                Self.transient,
                UInt8(SQLITE_UTF8)
            )
        case .blob(let buffer):
            return buffer.withUnsafeReadableBytes { bytes in
                sqlite_nio_sqlite3_bind_blob64(
                    pointer,
                    position,
                    bytes.baseAddress,
                    UInt64(bytes.count),
                    Self.transient
                )
            }
        case .null:
            return sqlite_nio_sqlite3_bind_null(pointer, position)
        }
    }

    private func value(at column: Int32, of pointer: OpaquePointer) -> SQLiteData {
        switch sqlite_nio_sqlite3_column_type(pointer, column) {
        case SQLITE_INTEGER:
            return .integer(Int(sqlite_nio_sqlite3_column_int64(pointer, column)))
        case SQLITE_FLOAT:
            return .float(sqlite_nio_sqlite3_column_double(pointer, column))
        case SQLITE_TEXT:
            // Text first, then its length: the order SQLite documents for a value that may need converting.
            guard let text = sqlite_nio_sqlite3_column_text(pointer, column) else { return .text("") }
            let count = Int(sqlite_nio_sqlite3_column_bytes(pointer, column))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite_nio_sqlite3_column_bytes(pointer, column))
            var buffer = ByteBufferAllocator().buffer(capacity: count)
            if let bytes = sqlite_nio_sqlite3_column_blob(pointer, column) {
                buffer.writeBytes(UnsafeRawBufferPointer(start: bytes, count: count))
            }
            return .blob(buffer)
        default:
            return .null
        }
    }

    private func check(_ status: Int32, _ sql: String) throws {
        guard status == SQLITE_OK else { throw failure(status, sql) }
    }

    private func failure(_ status: Int32, _ sql: String) -> SQLiteFailure {
        let message = raw.flatMap { sqlite_nio_sqlite3_errmsg($0) }.map { String(cString: $0) } ?? "error \(status)"
        return SQLiteFailure(code: status, message: message + " (in: " + sql.prefix(200) + ")")
    }

    /// `SQLITE_TRANSIENT`: SQLite copies bound text and blobs before the call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}

/// An error SQLite returned: its (extended) result code and message, with the start of the statement.
public struct SQLiteFailure: Error, CustomStringConvertible, Sendable {
    /// SQLite's result code, extended (`SQLITE_CONSTRAINT_UNIQUE` is 2067).
    public let code: Int32
    public let message: String

    public var description: String { "SQLite error \(code): \(message)" }
}
