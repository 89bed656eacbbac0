import Logging
import NIOCore
import SQLKit
import Synchronization

/// Hears every statement a database runs while someone listens: the SQL and its binds, as the engine gets them.
/// Tests listen to check what a piece of code asks the database (`ConsoleQueryPlanTests` asks the engine for the plan
/// of each statement a console page ran). Nobody listens in production; a statement then costs one lock.
public final class StatementTap: Sendable {
    public struct Statement: Sendable {
        public var sql: String
        public var binds: [any Encodable & Sendable]
        /// What running it asked of SQLite's virtual machine (`SQLITE_STMTSTATUS_VM_STEP`): its instructions,
        /// each row it visited among them, counted the same on every machine; nil on PostgreSQL and for a
        /// statement that failed.
        public var steps: Int?
        /// Its steps forward through a table read whole (`SQLITE_STMTSTATUS_FULLSCAN_STEP`): 0 unless it scanned.
        public var fullScanSteps: Int?
    }

    /// The statements heard since someone started listening; nil when nobody listens.
    private let heard = Mutex<[Statement]?>(nil)

    public init() {}

    /// Runs `body` and answers the statements run meanwhile (by any code on this database).
    public func recording<Result>(_ body: () async throws -> Result) async rethrows -> (Result, [Statement]) {
        heard.withLock { $0 = [] }
        defer { heard.withLock { $0 = nil } }
        let result = try await body()
        return (result, heard.withLock { $0 ?? [] })
    }

    var isListening: Bool { heard.withLock { $0 != nil } }

    /// Notes a statement about to run; answers its place in the recording (nil: nobody listens).
    func heard(_ sql: String, _ binds: [any Encodable & Sendable]) -> Int? {
        heard.withLock { statements in
            guard statements != nil else { return nil }
            statements!.append(Statement(sql: sql, binds: binds))
            return statements!.count - 1
        }
    }

    /// Notes what the statement heard at `place` cost SQLite once it ran (`SQLiteHandle.Work`).
    func ran(_ place: Int, _ work: SQLiteHandle.Work) {
        heard.withLock { statements in
            guard statements != nil, place < statements!.count else { return }
            statements![place].steps = work.steps
            statements![place].fullScanSteps = work.fullScanSteps
        }
    }
}

/// A database whose statements the tap hears (PostgreSQL's sessions: sql-kit's connections serialise for
/// themselves, so the statement is serialised once more, only while someone listens).
struct TappedSQLDatabase: SQLDatabase {
    let base: any SQLDatabase
    let tap: StatementTap

    var logger: Logger { base.logger }
    var eventLoop: any EventLoop { base.eventLoop }
    var dialect: any SQLDialect { base.dialect }
    var version: (any SQLDatabaseReportedVersion)? { base.version }
    var queryLogLevel: Logger.Level? { base.queryLogLevel }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) -> EventLoopFuture<
        Void
    > {
        hear(query)
        return base.execute(sql: query, onRow)
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        hear(query)
        try await base.execute(sql: query, onRow)
    }

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        try await base.withSession { try await closure(TappedSQLDatabase(base: $0, tap: tap)) }
    }

    private func hear(_ query: any SQLExpression) {
        guard tap.isListening else { return }
        let (sql, binds) = base.serialize(query)
        _ = tap.heard(sql, binds)
    }
}
