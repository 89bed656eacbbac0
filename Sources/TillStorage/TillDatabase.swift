import AsyncKit
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import PostgresKit
import SQLKit
import SQLiteKit

/// A pooled connection to SQLite or PostgreSQL, with transactions and migrations.
///
/// The same SQL (written against sql-kit, with portable types: TEXT, BIGINT, INTEGER, BOOLEAN) runs on both.
/// Timestamps are stored as BIGINT milliseconds since 1970. SQLite files run in WAL mode with a busy
/// timeout, so readers never wait for the single writer.
public final class TillDatabase: Sendable {
    /// Which engine is behind the database.
    public enum Engine: String, Sendable {
        case sqlite, postgres
    }

    public let engine: Engine
    public let configuration: DatabaseConfiguration
    /// Any query outside a transaction; each runs on a pooled connection. Reads only: writes go through
    /// `transaction`, which `writeGeneration` counts (caches rely on it).
    public let sql: any SQLDatabase
    private let shutdownPool: @Sendable () async throws -> Void
    /// SQLite only: this process's write transactions, one at a time.
    private let writeLock: AsyncLock?
    private let writes = NIOLockedValueBox<UInt64>(0)

    /// Counts this process's finished transactions (committed or not), except those marked as changing no
    /// data that callers cache: a cache entry read at one count is current while the count stays the same.
    public var writeGeneration: UInt64 { writes.withLockedValue { $0 } }

    private init(
        engine: Engine,
        configuration: DatabaseConfiguration,
        sql: any SQLDatabase,
        shutdown: @escaping @Sendable () async throws -> Void
    ) {
        self.engine = engine
        self.configuration = configuration
        self.sql = sql
        self.shutdownPool = shutdown
        self.writeLock = engine == .sqlite ? AsyncLock() : nil
    }

    /// Opens a pool of connections.
    public static func open(
        _ configuration: DatabaseConfiguration,
        logger: Logger = Logger(label: "till.database"),
        maximumConnections: Int = 8,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> TillDatabase {
        switch configuration {
        case .sqlite, .sqliteInMemory:
            let storage: SQLiteConfiguration.Storage
            if case .sqlite(let path) = configuration {
                storage = .file(path: path)
            } else {
                storage = .memory
            }
            let loops = Self.loopCount(eventLoopGroup)
            let perLoop = max(1, maximumConnections / loops)
            // One thread per connection and two spare: a connection waiting in SQLite's busy handler
            // (another process writing) never takes the thread the lock holder needs.
            let threads = NIOThreadPool(numberOfThreads: perLoop * loops + 2)
            threads.start()
            let source = TunedSQLiteSource(
                base: SQLiteConnectionSource(
                    configuration: SQLiteConfiguration(storage: storage, enableForeignKeys: true),
                    threadPool: threads
                ),
                wal: configuration != .sqliteInMemory
            )
            let pool = SQLiteConnectionPool(
                source: source,
                maximum: perLoop * loops,
                logger: logger,
                eventLoopGroup: eventLoopGroup,
                threads: threads
            )
            let database = PooledSQLiteDatabase(pool: pool, logger: logger, eventLoop: eventLoopGroup.any())
            return TillDatabase(
                engine: .sqlite,
                configuration: configuration,
                sql: database.sql(queryLogLevel: nil),
                shutdown: { try await pool.close() }
            )
        case .postgres(let url):
            let source = PostgresConnectionSource(sqlConfiguration: try SQLPostgresConfiguration(url: url))
            let pool = EventLoopGroupConnectionPool(
                source: source,
                maxConnectionsPerEventLoop: max(1, maximumConnections / loopCount(eventLoopGroup)),
                logger: logger,
                on: eventLoopGroup
            )
            let box = ConnectionPoolBox(pool)
            return TillDatabase(
                engine: .postgres,
                configuration: configuration,
                sql: PooledPostgresDatabase(box: box, logger: logger),
                shutdown: { try await box.close() }
            )
        }
    }

    /// Runs `body` in one transaction on one connection: committed when it returns, rolled back when it throws.
    ///
    /// On SQLite the transaction takes the write lock at once (`BEGIN IMMEDIATE`), so two writers never
    /// deadlock upgrading their locks; the busy timeout makes the second one wait.
    ///
    /// `bookkeeping: true` marks a transaction that changes nothing a cache holds (queue claims), so it leaves
    /// `writeGeneration` alone.
    public func transaction<Result: Sendable>(
        bookkeeping: Bool = false,
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> Result
    ) async throws -> Result {
        defer { if !bookkeeping { writes.withLockedValue { $0 &+= 1 } } }
        if let writeLock {
            return try await writeLock.withLock { try await self.run(transaction: body) }
        }
        return try await run(transaction: body)
    }

    /// Runs several reads on one connection (borrowed once, not once per statement). Not a transaction: on
    /// SQLite each statement sees the latest commit.
    public func read<Result: Sendable>(
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> Result
    ) async throws -> Result {
        try await sql.withSession(body)
    }

    private func run<Result: Sendable>(
        transaction body: @escaping @Sendable (any SQLDatabase) async throws -> Result
    ) async throws -> Result {
        let begin = engine == .sqlite ? "BEGIN IMMEDIATE" : "BEGIN"
        return try await sql.withSession { session in
            try await session.raw(SQLQueryString(begin)).run()
            do {
                let result = try await body(session)
                try await session.raw("COMMIT").run()
                return result
            } catch {
                try? await session.raw("ROLLBACK").run()
                throw error
            }
        }
    }

    private static func loopCount(_ group: any EventLoopGroup) -> Int {
        var count = 0
        for _ in group.makeIterator() { count += 1 }
        return max(1, count)
    }

    /// Closes every connection.
    public func shutdown() async throws {
        try await shutdownPool()
    }
}

/// SQLite connections with the settings Till relies on: WAL, a busy timeout, foreign keys.
struct TunedSQLiteSource: ConnectionPoolSource {
    let base: SQLiteConnectionSource
    let wal: Bool

    func makeConnection(logger: Logger, on eventLoop: any EventLoop) -> EventLoopFuture<SQLiteConnection> {
        base.makeConnection(logger: logger, on: eventLoop).flatMap { connection in
            var pragmas = ["PRAGMA busy_timeout = 15000", "PRAGMA foreign_keys = ON"]
            // Memory-mapped reads: a page another connection's write made stale is read from the mapping
            // rather than copied in again through read(2).
            if wal {
                pragmas += ["PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL", "PRAGMA mmap_size = 268435456"]
            }
            var future = eventLoop.makeSucceededVoidFuture()
            for pragma in pragmas {
                future = future.flatMap { connection.query(pragma, []).map { _ in } }
            }
            return future.map { connection }
        }
    }
}

/// AsyncKit's pool synchronises itself (each event loop's pool is confined to its loop) but is not
/// declared `Sendable`; this box says so once.
///
/// The box also owns the pool's lifetime: `close()` shuts it (and the SQLite thread pool) down, and a box
/// dropped without being closed shuts them down in the background instead of tripping AsyncKit's assertion.
final class ConnectionPoolBox<Source: ConnectionPoolSource>: @unchecked Sendable {
    let pool: EventLoopGroupConnectionPool<Source>
    private let threads: NIOThreadPool?
    private let closed = NIOLockedValueBox(false)

    init(_ pool: EventLoopGroupConnectionPool<Source>, threads: NIOThreadPool? = nil) {
        self.pool = pool
        self.threads = threads
    }

    func close() async throws {
        guard
            closed.withLockedValue({
                let was = $0; $0 = true; return !was
            })
        else { return }
        try await pool.shutdownAsync()
        try await threads?.shutdownGracefully()
    }

    deinit {
        guard !closed.withLockedValue({ $0 }) else { return }
        let threads = self.threads
        pool.shutdownGracefully { _ in threads?.shutdownGracefully { _ in } }
    }
}

/// An `SQLiteDatabase` that runs each query on a connection borrowed from the pool.
struct PooledSQLiteDatabase: SQLiteDatabase {
    let pool: SQLiteConnectionPool
    let logger: Logger
    let eventLoop: any EventLoop

    func query(
        _ query: String,
        _ binds: [SQLiteData],
        logger: Logger,
        _ onRow: @escaping @Sendable (SQLiteRow) -> Void
    ) -> EventLoopFuture<Void> {
        let promise = eventLoop.makePromise(of: Void.self)
        promise.completeWithTask { try await self.query(query, binds, onRow) }
        return promise.futureResult
    }

    func query(_ query: String, _ binds: [SQLiteData], _ onRow: @escaping @Sendable (SQLiteRow) -> Void) async throws {
        try await pool.withConnection { try await $0.query(query, binds, onRow) }
    }

    func withConnection<T>(_ closure: @escaping @Sendable (SQLiteConnection) -> EventLoopFuture<T>) -> EventLoopFuture<
        T
    > {
        let promise = eventLoop.makePromise(of: T.self)
        promise.completeWithTask { try await pool.withConnection { try await closure($0).get() } }
        return promise.futureResult
    }

    func withConnection<T>(_ closure: @escaping @Sendable (SQLiteConnection) async throws -> T) async throws -> T {
        try await pool.withConnection { try await closure($0) }
    }
}

/// A PostgreSQL `SQLDatabase` whose sessions hold one pooled connection.
struct PooledPostgresDatabase: SQLDatabase {
    let box: ConnectionPoolBox<PostgresConnectionSource>
    let logger: Logger
    var pool: EventLoopGroupConnectionPool<PostgresConnectionSource> { box.pool }

    private var database: any SQLDatabase { pool.database(logger: logger).sql(queryLogLevel: nil) }

    var eventLoop: any EventLoop { pool.eventLoopGroup.any() }
    var dialect: any SQLDialect { database.dialect }
    var version: (any SQLDatabaseReportedVersion)? { nil }
    var queryLogLevel: Logger.Level? { nil }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) -> EventLoopFuture<
        Void
    > {
        database.execute(sql: query, onRow)
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        try await database.execute(sql: query, onRow)
    }

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        let connection = try await pool.requestConnection(logger: logger).get()
        defer { pool.releaseConnection(connection, logger: logger) }
        return try await closure(connection.sql(queryLogLevel: nil))
    }
}
