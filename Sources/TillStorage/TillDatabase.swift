import AsyncKit
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import PostgresKit
import SQLKit
import SQLiteKit
import SQLiteNIO

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
    /// Any query outside a transaction; each runs on a pooled connection. Reads, mostly: writes that caches
    /// depend on go through `transaction`, which `writeGeneration` counts. (On SQLite an autocommit write
    /// takes the write lock as a transaction does.) Storage failures come out as `StorageUnavailable`, after the
    /// gate's wait.
    public let sql: any SQLDatabase
    /// Hears the statements run on this database while a test listens.
    public let statements: StatementTap
    /// The connections themselves, for transactions (which the gate runs whole).
    private let connections: any SQLDatabase
    /// Where storage failures are waited out, classified and counted.
    public let gate: StorageGate
    private let shutdownPool: @Sendable () async throws -> Void
    /// SQLite only: write transactions committed in groups.
    private let groupCommit: GroupCommit?
    /// SQLite only: the one writer's lock.
    private let writeLock: AsyncLock?
    private let checkpointer: WALCheckpointer?
    private let writes = NIOLockedValueBox<UInt64>(0)
    private let reruns = NIOLockedValueBox<Int>(0)

    /// SQLite: how many groups of write transactions were committed (see `GroupCommit`); nil on PostgreSQL.
    public var groupsCommitted: Int? { groupCommit?.groupCount }

    /// SQLite: how long this process's one writer has held the write lock since the database was opened (its
    /// transactions, groups and autocommit writes); nil on PostgreSQL. Its growth over a period, as a share of the
    /// period, is how busy the writer was: near 100%, writes queue for it.
    public var writerBusy: Duration? { writeLock?.busy }

    /// SQLite: how many checkpoints the background thread ran (see `WALCheckpointer`); nil on PostgreSQL.
    public var walCheckpoints: Int? { checkpointer?.checkpointCount }

    /// SQLite: pages of 4 KB the commits of this process appended to the write-ahead log since the database was
    /// opened (each is copied into the database file again by a checkpoint); nil on PostgreSQL.
    public var walPagesAppended: Int? { checkpointer?.pagesAppended }

    /// SQLite: the checkpoints this process's committing writers ran themselves so that the log could start over,
    /// and how long they held the writer (see `WALCheckpointer`); nil on PostgreSQL.
    public var walWriterCheckpoints: WALWriterCheckpoints? { checkpointer?.writerCheckpointsRun }

    /// PostgreSQL: how many transactions PostgreSQL ended for another's sake (a deadlock, a serialization failure)
    /// and this process ran again (`run(transaction:)`); 0 on SQLite. Each deadlock cost its transaction PostgreSQL's
    /// `deadlock_timeout` first: two changes that take the same locks in the same order never add to it.
    public var transactionsRunAgain: Int { reruns.withLockedValue { $0 } }

    /// Counts this process's finished transactions (committed or not), except those marked as changing no
    /// data that callers cache: a cache entry read at one count is current while the count stays the same.
    public var writeGeneration: UInt64 { writes.withLockedValue { $0 } }

    private init(
        engine: Engine,
        configuration: DatabaseConfiguration,
        sql: any SQLDatabase,
        statements: StatementTap,
        gate: StorageGate,
        writeLock: AsyncLock?,
        checkpointer: WALCheckpointer? = nil,
        shutdown: @escaping @Sendable () async throws -> Void
    ) {
        self.statements = statements
        self.writeLock = writeLock
        self.checkpointer = checkpointer
        self.engine = engine
        self.configuration = configuration
        self.connections = sql
        self.gate = gate
        self.sql = GatedSQLDatabase(inner: sql, gate: gate)
        self.shutdownPool = shutdown
        self.groupCommit = (sql as? DirectSQLiteDatabase).flatMap { database in
            writeLock.map { GroupCommit(database: database, writeLock: $0) }
        }
    }

    /// Opens a pool of connections.
    ///
    /// - Parameters:
    ///   - walCheckpointPages: SQLite: pages written to the log since the last checkpoint that start the next,
    ///     on a thread of its own (`WALCheckpointer`).
    ///   - walRestartPages: SQLite: the log's length at which the committing writer finishes the checkpoint
    ///     itself, so that the log starts over instead of growing. Each restart holds every write for a moment; four
    ///     times the length (65,536) made them four times rarer and the p99 at 1,000 purchases a second lower, but
    ///     brought stalls of 20 to 90 ms when confirmations were held back (docs/benchmarks.md, "2026-12-06, early
    ///     morning"), so the length stays.
    ///   - walFinishPages: SQLite: the most pages the committing writer copies itself, at first: it wakes the
    ///     thread again while more are left (`WALCheckpointPolicy`).
    ///   - storageWait: how long an operation waits for storage that fails (a full disk, a server away) to come
    ///     back before it gives up with `StorageUnavailable` (`StorageGate`).
    public static func open(
        _ configuration: DatabaseConfiguration,
        logger: Logger = Logger(label: "till.database"),
        maximumConnections: Int = 8,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        walCheckpointPages: Int32 = 1000,
        walRestartPages: Int32 = 16_384,
        walFinishPages: Int32 = 128,
        storageWait: Duration = .seconds(5)
    ) async throws -> TillDatabase {
        let gate = StorageGate(wait: storageWait, logger: logger)
        switch configuration {
        case .sqlite, .sqliteInMemory:
            // A scratch database is a temporary file (sqlite-nio's SQLite is built without shared caches, so
            // connections cannot share memory), removed when the pool closes.
            let scratch = configuration == .sqliteInMemory
            let path: String
            if case .sqlite(let file) = configuration {
                path = file
            } else {
                path =
                    FileManager.default.temporaryDirectory.appendingPathComponent(
                        "till-scratch-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString).sqlite"
                    ).path
            }
            let policy = WALCheckpointPolicy(
                threshold: walCheckpointPages,
                restartThreshold: walRestartPages,
                finishPages: walFinishPages
            )
            let checkpointer = try WALCheckpointer.start(policy: policy) {
                try Self.openTuned(path: path, scratch: scratch)
            }
            let pool = SQLiteConnectionPool(
                maximum: maximumConnections,
                open: {
                    let connection = try Self.openTuned(path: path, scratch: scratch)
                    checkpointer.observe(connection)
                    return connection
                },
                onClose: {
                    checkpointer.stop()
                    guard scratch else { return }
                    for suffix in ["", "-wal", "-shm", "-journal"] {
                        try? FileManager.default.removeItem(atPath: path + suffix)
                    }
                }
            )
            let writeLock = AsyncLock()
            let tap = StatementTap()
            return TillDatabase(
                engine: .sqlite,
                configuration: configuration,
                sql: DirectSQLiteDatabase(
                    target: .pool(pool, writeLock),
                    logger: logger,
                    eventLoop: eventLoopGroup.any(),
                    tap: tap
                ),
                statements: tap,
                gate: gate,
                writeLock: writeLock,
                checkpointer: checkpointer,
                shutdown: { try await pool.close() }
            )
        case .postgres(let url):
            let source = PostgresConnectionSource(sqlConfiguration: try SQLPostgresConfiguration(url: url))
            // The pool logs every failed connection attempt as an error (several a second while the server is
            // away); the gate logs the outage once, with its start and end.
            var poolLogger = logger
            poolLogger.logLevel = .critical
            // A request waits for a free connection as long as it waits for storage, not AsyncKit's 10 s: with
            // every connection in use or failing to open, it gets its 503 within `database.wait-seconds`.
            let pool = EventLoopGroupConnectionPool(
                source: source,
                maxConnectionsPerEventLoop: max(1, maximumConnections / loopCount(eventLoopGroup)),
                requestTimeout: TimeAmount(storageWait),
                logger: poolLogger,
                on: eventLoopGroup
            )
            let box = ConnectionPoolBox(pool)
            let tap = StatementTap()
            return TillDatabase(
                engine: .postgres,
                configuration: configuration,
                sql: TappedSQLDatabase(base: PooledPostgresDatabase(box: box, logger: poolLogger), tap: tap),
                statements: tap,
                gate: gate,
                writeLock: nil,
                shutdown: { try await box.close() }
            )
        }
    }

    /// Runs `body` in one transaction on one connection: committed when it returns, rolled back when it throws.
    ///
    /// On SQLite the transaction takes the write lock at once (`BEGIN IMMEDIATE`), so two writers never
    /// deadlock upgrading their locks; the busy timeout makes the second one wait. Transactions waiting for
    /// this process's writer are committed together, each in its own savepoint (`GroupCommit`): the result
    /// comes back once the group is committed. A body must not start another transaction (it would wait for
    /// its own group).
    ///
    /// `bookkeeping: true` marks a transaction that changes nothing a cache holds (queue claims), so it leaves
    /// `writeGeneration` alone.
    ///
    /// Only a commit that wrote ends a full (or read-only) disk's outage: a transaction that changed no row commits
    /// without writing a byte (a queue's claim that found nothing due, the consumption worker's every 5 s), which
    /// proves nothing about the disk. On SQLite the group commit counts the rows its transactions changed
    /// (`sqlite3_total_changes64`); on PostgreSQL a transaction that is not `bookkeeping` counts as a write.
    ///
    /// When storage fails (`StorageUnavailable`), the whole transaction runs again once storage is back, within the
    /// gate's wait: a failed transaction committed nothing, so `body` must only read and write the database (it
    /// may run more than once). A connection lost during a PostgreSQL COMMIT is not retried (`outcomeUnknown`).
    @discardableResult
    public func transaction<Result: Sendable>(
        bookkeeping: Bool = false,
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> Result
    ) async throws -> Result {
        defer { if !bookkeeping { writes.withLockedValue { $0 &+= 1 } } }
        if let groupCommit {
            // A closure, not the key path `\.wrote`: a key path of a generic type is made anew at each call (1% of a
            // purchase's CPU, perf).
            return try await gate.run(writes: { $0.wrote }) { try await groupCommit.run(body) }.value
        }
        return try await gate.run(writes: !bookkeeping) { try await run(transaction: body) }
    }

    /// Runs several reads on one connection (borrowed once, not once per statement). Not a transaction: on
    /// SQLite each statement sees the latest commit. Run again when storage fails, like a transaction.
    public func read<Result: Sendable>(
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> Result
    ) async throws -> Result {
        try await gate.run(writes: false) { try await connections.withSession(body) }
    }

    /// PostgreSQL's transactions, one per connection (SQLite's go through `GroupCommit`). A connection lost before
    /// the COMMIT left nothing behind (the server rolls back); lost during it, nobody knows.
    ///
    /// A transaction that PostgreSQL gave up to let another finish (`lostToAnotherTransaction`) committed nothing, so
    /// it runs again, twice at the most, and is counted (`transactionsRunAgain`). Two transactions that lock the same
    /// rows in opposite orders deadlock: PostgreSQL notices after its `deadlock_timeout` (1 s by default) and ends one
    /// of them, which then runs after the other. Changes of a customer's purchases hold the customer first and then
    /// the rows, as a link does (`Ledger.owner` reads the rows without holding them); until 2026-12-08 a notification
    /// held its purchase's rows and then the customer, and met a link that way.
    private func run<Result: Sendable>(
        transaction body: @escaping @Sendable (any SQLDatabase) async throws -> Result
    ) async throws -> Result {
        var runs = 1
        while true {
            do {
                return try await runOnce(transaction: body)
            } catch let error where runs < 3 && Self.lostToAnotherTransaction(error) {
                // A moment of random length first: two transactions ended by the same deadlock, run again at once,
                // would take their locks in the same opposite orders again.
                try await Task.sleep(for: .milliseconds(Int.random(in: 1...20) * runs))
                runs += 1
                reruns.withLockedValue { $0 += 1 }
            }
        }
    }

    /// PostgreSQL ended the transaction for another's sake: a deadlock (40P01), or a serialization failure (40001).
    static func lostToAnotherTransaction(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError, error.code == .server else { return false }
        return error.serverInfo?[.sqlState] == "40P01" || error.serverInfo?[.sqlState] == "40001"
    }

    private func runOnce<Result: Sendable>(
        transaction body: @escaping @Sendable (any SQLDatabase) async throws -> Result
    ) async throws -> Result {
        try await connections.withSession { session in
            let result: Result
            do {
                try await session.raw("BEGIN").run()
                result = try await body(session)
            } catch {
                try? await session.raw("ROLLBACK").run()
                if let failure = StorageUnavailable.classify(error), failure.reason == .outcomeUnknown {
                    throw StorageUnavailable(.unreachable, failure.detail + " (before COMMIT: nothing was written)")
                }
                throw error
            }
            do {
                try await session.raw("COMMIT").run()
            } catch {
                if let failure = StorageUnavailable.classify(error), failure.reason != .diskFull {
                    throw StorageUnavailable(.outcomeUnknown, failure.detail + " (during COMMIT)")
                }
                throw error
            }
            return result
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

extension TillDatabase {
    /// Opens one SQLite connection with the settings Till relies on: WAL, a busy timeout, foreign keys, pages read
    /// into SQLite's own cache rather than through a memory map. A scratch database is not made durable at all.
    static func openTuned(path: String, scratch: Bool) throws -> SQLiteHandle {
        let handle = try SQLiteHandle(path: path)
        var pragmas = [
            "PRAGMA busy_timeout = 15000", "PRAGMA foreign_keys = ON", "PRAGMA journal_mode = WAL",
            // No memory map. SQLite reports an I/O error on a mapped file as a signal that ends the process (its
            // docs, "Memory-Mapped I/O"), where a read reports it as an error the storage gate can classify. And
            // while purchases come in, checkpoints change the file, so each connection dropped its whole map at
            // its next transaction and faulted the pages back in: with a 256 MiB map `munmap` was 1.4% of a
            // purchase's CPU, and a run took 3.5 times the page faults and 1.4 times the resident memory, for the
            // same CPU a purchase (docs/benchmarks.md, "SQLite without a memory map").
            "PRAGMA mmap_size = 0",
            // Savepoints (every transaction of a group commit has one) journal the pages they change. With
            // temporary files on disk, that journal spilled into a file created, written and deleted once per
            // group: 6% of a submission's CPU at 1,000/s. In memory it is a copy of each page.
            "PRAGMA temp_store = MEMORY",
        ]
        pragmas.append(scratch ? "PRAGMA synchronous = OFF" : "PRAGMA synchronous = NORMAL")
        for pragma in pragmas { try handle.execute(pragma, []) { _, _ in } }
        return handle
    }
}
