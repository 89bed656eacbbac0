import Foundation
import SQLKit
import Testing
import TillTestSupport

@testable import TillStorage

/// The databases storage tests run against: SQLite always, PostgreSQL when `TILL_TEST_POSTGRES_URL` is set
/// (`.ci/run` starts one) and always under CI.
enum TestDatabases {
    static var all: [DatabaseConfiguration] {
        var list: [DatabaseConfiguration] = [.sqliteInMemory, .sqlite(path: temporaryFile())]
        // Under CI PostgreSQL is required: a missing one fails the cases that need it (see `Prerequisite`).
        if Prerequisite.postgres.shouldRun {
            list.append(.postgres(url: TestDatabase.postgresURL ?? "postgres://missing"))
        }
        return list
    }

    static func temporaryFile() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("till-test-\(UUID().uuidString).sqlite").path
    }
}

@Suite(.sharingTheMachine, .serialized)
struct TillStorageTests {
    static let migrations = [
        Migration(
            "1-notes",
            ["CREATE TABLE storage_test_notes (id TEXT PRIMARY KEY, body TEXT NOT NULL, at BIGINT NOT NULL)"]
        ),
        Migration("2-counter", ["CREATE TABLE storage_test_counter (name TEXT PRIMARY KEY, value BIGINT NOT NULL)"]),
    ]

    func fresh(_ configuration: DatabaseConfiguration) async throws -> TillDatabase {
        let database = try await TillDatabase.open(configuration)
        if database.engine == .postgres {
            try await database.sql.raw("DROP TABLE IF EXISTS storage_test_notes").run()
            try await database.sql.raw("DROP TABLE IF EXISTS storage_test_counter").run()
            try await database.sql.raw("DROP TABLE IF EXISTS storage_test_tags").run()
            try await database.sql.raw(
                "CREATE TABLE IF NOT EXISTS till_schema_migrations (schema TEXT NOT NULL, id TEXT NOT NULL, applied_at BIGINT NOT NULL, PRIMARY KEY (schema, id))"
            ).run()
            try await database.sql.raw("DELETE FROM till_schema_migrations WHERE schema = 'storage-test'").run()
        }
        return database
    }

    @Test(arguments: TestDatabases.all)
    func migrationsApplyOnceAndInOrder(_ configuration: DatabaseConfiguration) async throws {
        let database = try await fresh(configuration)
        try await database.migrate(Self.migrations, schema: "storage-test")
        try await database.migrate(Self.migrations, schema: "storage-test")
        let applied = try await database.sql.raw(
            "SELECT id FROM till_schema_migrations WHERE schema = 'storage-test' ORDER BY id"
        )
        .all().map { try $0.decode(column: "id", as: String.self) }
        #expect(applied == ["1-notes", "2-counter"])
        try await database.shutdown()
    }

    /// A file database is read with reads, not through a memory map, and keeps a log: an I/O error on a mapped
    /// file is a signal that ends the process, not an error, and on a busy server the map was dropped and faulted
    /// in again after every checkpoint (docs/benchmarks.md, "SQLite without a memory map"). Every connection, the
    /// pool's and the checkpointer's, is opened by `openTuned`, so one connection's settings are all of theirs.
    @Test func aFileDatabaseIsReadWithoutAMemoryMap() async throws {
        let database = try await TillDatabase.open(.sqlite(path: TestDatabases.temporaryFile()))
        let mmap = try await database.sql.raw("PRAGMA mmap_size").all().map {
            try $0.decode(column: "mmap_size", as: Int.self)
        }
        #expect(mmap == [0])
        let mode = try await database.sql.raw("PRAGMA journal_mode").all().map {
            try $0.decode(column: "journal_mode", as: String.self)
        }
        #expect(mode == ["wal"])
        try await database.shutdown()
    }

    /// An older build meeting a database a newer one migrated refuses it, names the steps it does not know, and
    /// writes nothing: not its own missing steps, not a record.
    @Test(arguments: TestDatabases.all)
    func aDatabaseFromANewerBuildIsRefusedUntouched(_ configuration: DatabaseConfiguration) async throws {
        let database = try await fresh(configuration)
        let newer =
            Self.migrations + [
                Migration("3-tags", ["CREATE TABLE storage_test_tags (id TEXT PRIMARY KEY)"])
            ]
        try await database.migrate([newer[0], newer[2]], schema: "storage-test")
        func applied() async throws -> [String] {
            try await database.sql.raw(
                "SELECT id FROM till_schema_migrations WHERE schema = 'storage-test' ORDER BY id"
            ).all().map { try $0.decode(column: "id", as: String.self) }
        }
        do {
            try await database.migrate(Self.migrations, schema: "storage-test")
            Issue.record("an older build migrated a newer database")
        } catch let error as DatabaseError {
            #expect(error.code == .newerSchema)
            #expect(error.message.contains("3-tags") && error.message.contains("nothing was changed"), "\(error)")
        }
        #expect(try await applied() == ["1-notes", "3-tags"])
        // The older build's own missing step was not run either.
        await #expect(throws: (any Error).self) {
            try await database.sql.raw("SELECT count(*) AS n FROM storage_test_counter").run()
        }
        // The newer build still opens it, and adds what it lacks.
        try await database.migrate(newer, schema: "storage-test")
        #expect(try await applied() == ["1-notes", "2-counter", "3-tags"])
        try await database.sql.raw("DROP TABLE storage_test_tags").run()
        try await database.shutdown()
    }

    @Test(arguments: TestDatabases.all)
    func aTransactionCommitsOrRollsBackWhole(_ configuration: DatabaseConfiguration) async throws {
        let database = try await fresh(configuration)
        try await database.migrate(Self.migrations, schema: "storage-test")
        try await database.transaction { db in
            try await db.raw("INSERT INTO storage_test_notes (id, body, at) VALUES ('a', 'kept', 1)").run()
        }
        struct Boom: Error {}
        await #expect(throws: Boom.self) {
            try await database.transaction { db in
                try await db.raw("INSERT INTO storage_test_notes (id, body, at) VALUES ('b', 'lost', 2)").run()
                throw Boom()
            }
        }
        let ids = try await database.sql.raw("SELECT id FROM storage_test_notes ORDER BY id").all()
            .map { try $0.decode(column: "id", as: String.self) }
        #expect(ids == ["a"])
        try await database.shutdown()
    }

    @Test(arguments: TestDatabases.all)
    func concurrentTransactionsSerialiseWithoutLostUpdates(_ configuration: DatabaseConfiguration) async throws {
        let database = try await fresh(configuration)
        try await database.migrate(Self.migrations, schema: "storage-test")
        try await database.sql.raw("INSERT INTO storage_test_counter (name, value) VALUES ('hits', 0)").run()
        let lockClause = database.engine == .postgres ? " FOR UPDATE" : ""
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<40 {
                group.addTask {
                    try await database.transaction { db in
                        let row = try await db.raw(
                            SQLQueryString("SELECT value FROM storage_test_counter WHERE name = 'hits'" + lockClause)
                        ).first()
                        let value = try row!.decode(column: "value", as: Int64.self)
                        try await db.raw(
                            "UPDATE storage_test_counter SET value = \(bind: value + 1) WHERE name = 'hits'"
                        ).run()
                    }
                }
            }
            try await group.waitForAll()
        }
        let total = try await database.sql.raw("SELECT value FROM storage_test_counter WHERE name = 'hits'").first()!
            .decode(column: "value", as: Int64.self)
        #expect(total == 40)
        try await database.shutdown()
    }

    /// Two transactions that lock two rows in opposite orders deadlock; PostgreSQL ends one of them (40P01), which
    /// committed nothing and runs again after the other: both changes land, and the caller sees no error.
    @Test(.enabled(if: Prerequisite.postgres.shouldRun, Comment(rawValue: Prerequisite.postgres.skipMessage)))
    func aTransactionPostgreSQLEndsForADeadlockRunsAgain() async throws {
        let database = try await fresh(.postgres(url: TestDatabase.postgresURL ?? "postgres://missing"))
        try await database.migrate(Self.migrations, schema: "storage-test")
        try await database.sql.raw("INSERT INTO storage_test_counter (name, value) VALUES ('a', 0), ('b', 0)").run()
        let meeting = Meeting(parties: 2)
        // Each takes its first row, waits until the other has taken its own (on the first run only), then asks for
        // the other's row.
        func change(first: String, then second: String) async throws {
            try await database.transaction { db in
                let run = await meeting.run()
                try await db.raw("UPDATE storage_test_counter SET value = value + 1 WHERE name = \(bind: first)").run()
                if run <= 2 { try await meeting.arrive() }
                try await db.raw("UPDATE storage_test_counter SET value = value + 1 WHERE name = \(bind: second)").run()
            }
        }
        async let one: Void = change(first: "a", then: "b")
        async let other: Void = change(first: "b", then: "a")
        _ = try await (one, other)
        let values = try await database.sql.raw("SELECT value FROM storage_test_counter ORDER BY name").all()
            .map { try $0.decode(column: "value", as: Int64.self) }
        #expect(values == [2, 2])
        // At least one ran again. Under load CI once saw more runs than three, though each change landed once: a
        // rerun may meet the other's and deadlock again (`TillDatabase.run` waits a random moment before each).
        let runs = await meeting.runs
        #expect(runs >= 3, "\(runs) runs")
        try await database.shutdown()
    }

    /// Parties that wait for each other (at most 10 s), and the runs of their transactions, counted.
    actor Meeting {
        let parties: Int
        var arrived = 0
        var runs = 0
        init(parties: Int) { self.parties = parties }

        func run() -> Int {
            runs += 1
            return runs
        }

        func arrive() async throws {
            arrived += 1
            let deadline = ContinuousClock.now + .seconds(10)
            while arrived < parties {
                guard ContinuousClock.now < deadline else { throw CancellationError() }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    /// A `CHECK (column IN (…))` refuses the same values on both engines; on SQLite it is stored as comparisons
    /// (`TillDatabase.migrate`), so that a write compares in place instead of filling a temporary table with the list
    /// (`OpenEphemeral` in its plan) at every run. A second start finds it rewritten and changes nothing.
    @Test(arguments: TestDatabases.all)
    func aCheckOfAListRefusesTheSameValuesAndSQLiteComparesInPlace(_ configuration: DatabaseConfiguration) async throws
    {
        let database = try await fresh(configuration)
        if database.engine == .postgres { try await database.sql.raw("DROP TABLE IF EXISTS storage_test_kinds").run() }
        let migrations =
            Self.migrations + [
                Migration(
                    "3-kinds",
                    [
                        """
                        CREATE TABLE storage_test_kinds (
                            id TEXT PRIMARY KEY, kind TEXT NOT NULL CHECK (kind IN ('a', 'b', 'c')),
                            note TEXT CHECK (note IN ('x, y', 'it''s', 'z (1)')), size BIGINT CHECK (size > 0))
                        """
                    ]
                )
            ]
        try await database.migrate(migrations, schema: "storage-test")
        func insert(_ id: String, _ kind: String, _ note: String?) async -> Bool {
            do {
                try await database.sql.raw(
                    "INSERT INTO storage_test_kinds (id, kind, note, size) VALUES (\(bind: id), \(bind: kind), \(bind: note), 1)"
                ).run()
                return true
            } catch {
                return false
            }
        }
        #expect(await insert("1", "a", nil))
        #expect(await insert("2", "c", "x, y"))
        #expect(await insert("3", "b", "it's"))
        #expect(await insert("4", "b", "z (1)"))
        #expect(await !insert("5", "d", nil))
        #expect(await !insert("6", "A", nil))
        #expect(await !insert("7", "a", "x"))
        #expect(await !insert("8", "a", "it"))
        if database.engine == .sqlite {
            func stored() async throws -> (sql: String, version: Int) {
                let sql = try await database.sql.raw(
                    "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'storage_test_kinds'"
                ).first()!.decode(column: "sql", as: String.self)
                let version = try await database.sql.raw("PRAGMA schema_version").first()!
                    .decode(column: "schema_version", as: Int.self)
                return (sql, version)
            }
            let first = try await stored()
            #expect(first.sql.contains("CHECK (kind = 'a' OR kind = 'b' OR kind = 'c')"), "\(first.sql)")
            #expect(first.sql.contains("CHECK (note = 'x, y' OR note = 'it''s' OR note = 'z (1)')"), "\(first.sql)")
            #expect(first.sql.contains("CHECK (size > 0)") && !first.sql.contains(" IN ("), "\(first.sql)")
            let plan = try await database.sql.raw(
                "EXPLAIN INSERT INTO storage_test_kinds (id, kind, note, size) VALUES ('9', 'a', 'z (1)', 1)"
            ).all().map { try $0.decode(column: "opcode", as: String.self) }
            #expect(!plan.isEmpty && !plan.contains("OpenEphemeral"), "\(plan)")
            let check = try await database.sql.raw("PRAGMA integrity_check").first()!.decode(
                column: "integrity_check",
                as: String.self
            )
            #expect(check == "ok")
            try await database.migrate(migrations, schema: "storage-test")
            #expect(try await stored() == first)
        }
        if database.engine == .postgres { try await database.sql.raw("DROP TABLE storage_test_kinds").run() }
        try await database.shutdown()
    }

    @Test func anSQLiteFileKeepsItsDataAcrossReopening() async throws {
        let path = TestDatabases.temporaryFile()
        let first = try await TillDatabase.open(.sqlite(path: path))
        try await first.migrate(Self.migrations, schema: "storage-test")
        try await first.sql.raw("INSERT INTO storage_test_notes (id, body, at) VALUES ('x', 'still here', 3)").run()
        try await first.shutdown()
        let second = try await TillDatabase.open(.sqlite(path: path))
        let body = try await second.sql.raw("SELECT body FROM storage_test_notes WHERE id = 'x'").first()?
            .decode(column: "body", as: String.self)
        #expect(body == "still here")
        try await second.shutdown()
    }

    @Test func configurationsParse() throws {
        #expect(try DatabaseConfiguration(parsing: ":memory:") == .sqliteInMemory)
        #expect(try DatabaseConfiguration(parsing: "till.sqlite") == .sqlite(path: "till.sqlite"))
        #expect(try DatabaseConfiguration(parsing: "sqlite:/var/till.db") == .sqlite(path: "/var/till.db"))
        #expect(
            try DatabaseConfiguration(parsing: "postgres://u:secret@h:5432/d")
                == .postgres(url: "postgres://u:secret@h:5432/d")
        )
        #expect(
            DatabaseConfiguration.postgres(url: "postgres://u:secret@h:5432/d").description
                == "postgres://u:***@h:5432/d"
        )
        #expect(throws: DatabaseError.self) { try DatabaseConfiguration(parsing: "mysql://x") }
    }
}

/// The memoised column names are sql-kit's own snake_case names.
@Suite struct ColumnNameTests {
    private struct Tricky: Encodable {
        var appAppleId = 1
        var myURLValue = 2
        var sha256 = 3
        var x5cChain = 4
        var a = 5
        var isUpgraded = 6
        var ABC = 7
        var transactionIDs = 8
        var nextAttemptAt: Int? = nil
    }

    @Test func columnNamesMatchSQLKitsSnakeCase() throws {
        let reference = SQLQueryEncoder(keyEncodingStrategy: .convertToSnakeCase, nilEncodingStrategy: .asNil)
        let expected = try reference.encode(Tricky()).map(\.0)
        #expect(expected.contains("my_uRL_value") && expected.contains("next_attempt_at"))
        #expect(try ColumnNames.encoder.encode(Tricky()).map(\.0) == expected)
        // Twice: the second time from the memo.
        #expect(try ColumnNames.encoder.encode(Tricky()).map(\.0) == expected)
    }
}

/// Write transactions committed in groups keep their own outcomes.
@Suite struct GroupCommitTests {
    struct Refused: Error {}

    @Test func concurrentTransactionsCommitTogetherAndAFailingOneAloneIsRolledBack() async throws {
        let database = try await TillDatabase.open(.sqlite(path: TestDatabases.temporaryFile()))
        try await database.sql.raw("CREATE TABLE grouped (n INTEGER PRIMARY KEY, note TEXT NOT NULL)").run()
        let outcomes = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
            for n in 0..<40 {
                group.addTask {
                    do {
                        let echoed = try await database.transaction { db -> Int in
                            try await db.raw("INSERT INTO grouped (n, note) VALUES (\(bind: n), 'first')").run()
                            try await db.raw("UPDATE grouped SET note = 'second' WHERE n = \(bind: n)").run()
                            // Holding the writer a while, as a busy server's transactions do, so that the
                            // others queue up behind this group and go together in the next.
                            try await Task.sleep(for: .milliseconds(2))
                            if n % 5 == 0 { throw Refused() }
                            return n
                        }
                        #expect(echoed == n)
                        return (n, true)
                    } catch is Refused {
                        return (n, false)
                    }
                }
            }
            var outcomes: [Int: Bool] = [:]
            for try await (n, committed) in group { outcomes[n] = committed }
            return outcomes
        }
        #expect(outcomes.count == 40)
        let rows = try await database.sql.raw("SELECT n, note FROM grouped ORDER BY n").all()
        let kept = try rows.map { try $0.decode(column: "n", as: Int.self) }
        #expect(kept == (0..<40).filter { $0 % 5 != 0 })
        #expect(try rows.allSatisfy { try $0.decode(column: "note", as: String.self) == "second" })
        #expect(outcomes.filter { !$0.value }.keys.sorted() == [0, 5, 10, 15, 20, 25, 30, 35])
        // 40 transactions started together did not take 40 commits (the table's creation took one).
        let groups = try #require(database.groupsCommitted)
        #expect(groups < 30, "\(groups) groups for 40 transactions")
        try await database.shutdown()
    }

    /// A transaction alone in its group runs without a savepoint (which would copy every page it changes into SQLite's
    /// statement journal), and keeps its outcome: a failure rolls back all it did, a success commits.
    @Test func aTransactionAloneRunsWithoutASavepointAndKeepsItsOutcome() async throws {
        let database = try await TillDatabase.open(.sqlite(path: TestDatabases.temporaryFile()))
        try await database.sql.raw("CREATE TABLE alone (n INTEGER PRIMARY KEY)").run()
        let (_, failed) = await database.statements.recording {
            await #expect(throws: Refused.self) {
                try await database.transaction { db in
                    try await db.raw("INSERT INTO alone (n) VALUES (1)").run()
                    throw Refused()
                }
            }
        }
        let (committed, heard) = try await database.statements.recording {
            try await database.transaction { db -> Int in
                try await db.raw("INSERT INTO alone (n) VALUES (2)").run()
                return 2
            }
        }
        #expect(committed == 2)
        #expect(failed.map(\.sql) == ["BEGIN IMMEDIATE", "INSERT INTO alone (n) VALUES (1)", "ROLLBACK"])
        #expect(heard.map(\.sql) == ["BEGIN IMMEDIATE", "INSERT INTO alone (n) VALUES (2)", "COMMIT"])
        let kept = try await database.sql.raw("SELECT n FROM alone").all().map {
            try $0.decode(column: "n", as: Int.self)
        }
        #expect(kept == [2])
        try await database.shutdown()
    }
}

/// The write lock counts how long it was held: the writer's busy time that `till bench submissions` and `/metrics`
/// report.
@Suite struct AsyncLockTests {
    @Test func theLockCountsTheTimeItIsHeldAndNothingWhileFree() async throws {
        let lock = AsyncLock()
        #expect(lock.busy == .zero)
        await lock.lock()
        try await Task.sleep(for: .milliseconds(40))
        // Held now: the present holding counts.
        #expect(lock.busy >= .milliseconds(40))
        // A waiter takes it straight from the holder: one holding, counted without a gap.
        let waiter = Task {
            await lock.lock()
            try await Task.sleep(for: .milliseconds(40))
            lock.unlock()
        }
        try await Task.sleep(for: .milliseconds(20))
        lock.unlock()
        try await waiter.value
        let held = lock.busy
        #expect(held >= .milliseconds(100))
        // Free: the count stands still.
        try await Task.sleep(for: .milliseconds(30))
        #expect(lock.busy == held)
    }

    @Test(arguments: TestDatabases.all)
    func anSQLiteDatabaseSaysHowLongItsWriterWorkedAndPostgreSQLDoesNot(_ configuration: DatabaseConfiguration)
        async throws
    {
        let database = try await TillDatabase.open(configuration)
        let before = database.writerBusy
        try await database.transaction { db in
            try await db.raw("CREATE TABLE IF NOT EXISTS busy_writer (n INTEGER)").run()
            try await Task.sleep(for: .milliseconds(30))
        }
        if database.engine == .sqlite {
            #expect(try #require(database.writerBusy) - #require(before) >= .milliseconds(30))
        } else {
            #expect(before == nil && database.writerBusy == nil)
            try await database.sql.raw("DROP TABLE busy_writer").run()
        }
        try await database.shutdown()
    }
}

/// Statements built from records.
@Suite struct RecordStatementTests {
    private struct Row: Codable {
        var id: String
        var noteText: String?
    }

    @Test func recordsAreInsertedAndUpdatedByKeyAndAMissingKeyIsAnError() async throws {
        let database = try await TillDatabase.open(.sqlite(path: TestDatabases.temporaryFile()))
        try await database.sql.raw("CREATE TABLE rows (id TEXT PRIMARY KEY, note_text TEXT)").run()
        try await database.sql.run(
            RecordStatements.insert(into: "rows", Row(id: "a", noteText: "x"), with: ColumnNames.encoder)
        )
        try await database.sql.run(
            RecordStatements.update("rows", Row(id: "a", noteText: nil), keys: ["id"], with: ColumnNames.encoder)
        )
        let row = try await database.sql.raw("SELECT * FROM rows").first(decoding: Row.self, with: ColumnNames.decoder)
        #expect(row?.id == "a" && row?.noteText == nil)
        #expect(throws: MissingKeyColumn.self) {
            try RecordStatements.update("rows", Row(id: "a"), keys: ["row_id"], with: ColumnNames.encoder)
        }
        try await database.shutdown()
    }
}

/// The write-ahead log is checkpointed off the committing thread, and does not grow without end.
@Suite struct WALCheckpointTests {
    @Test func checkpointsRunInTheBackgroundAndTheLogStartsOver() async throws {
        let path = TestDatabases.temporaryFile()
        let database = try await TillDatabase.open(.sqlite(path: path), walCheckpointPages: 50, walRestartPages: 400)
        try await database.sql.raw("CREATE TABLE filler (n INTEGER PRIMARY KEY, text TEXT NOT NULL)").run()
        let page = String(repeating: "x", count: 3000)
        // About 2,000 pages in all: five times the restart length, forty times the checkpoint length.
        for n in 0..<2000 {
            try await database.transaction { db in
                try await db.raw("INSERT INTO filler (n, text) VALUES (\(bind: n), \(bind: page))").run()
            }
        }
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(60)
        while try #require(database.walCheckpoints) == 0 && clock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try #require(database.walCheckpoints) > 0)
        // Frames are 4 KiB pages and a 24-byte header; a log that never started over would hold all 2,000.
        let walSize = try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int ?? 0
        #expect(walSize < 1000 * (4096 + 24), "the log is \(walSize) bytes")
        let count = try await database.sql.raw("SELECT COUNT(*) AS n FROM filler").first()?.decode(
            column: "n",
            as: Int.self
        )
        #expect(count == 2000)
        // Each commit appended its page or more, counted across the log's restarts.
        let appended = try #require(database.walPagesAppended)
        #expect(appended >= 2000, "\(appended) pages counted")
        try await database.shutdown()
    }

    /// Past the restart length the committing writer copies only a short remainder itself (its syncs hold every
    /// write, longer the more pages are left), and gives a longer one back to the thread; as the log grows further it
    /// takes more, then whatever is left, so that the log stays bounded.
    @Test func theCommittingWriterFinishesOnlyAShortRemainder() {
        let policy = WALCheckpointPolicy(threshold: 1000, restartThreshold: 16_384, finishPages: 128)
        #expect(policy.step(pages: 900, uncopied: 900) == .none)
        #expect(policy.step(pages: 1200, uncopied: 1000) == .wake)
        #expect(policy.step(pages: 16_384, uncopied: 128) == .finish)
        #expect(policy.step(pages: 16_384, uncopied: 129) == .wake)
        #expect(policy.step(pages: 16_384, uncopied: 1000) == .wake)
        // A sixteenth past the restart length: up to eight times as much.
        #expect(policy.step(pages: 17_408, uncopied: 1024) == .finish)
        #expect(policy.step(pages: 17_408, uncopied: 1025) == .wake)
        // A quarter past: whatever is left.
        #expect(policy.bound == 20_480)
        #expect(policy.step(pages: 20_480, uncopied: 20_000) == .finish)
    }

    /// The checkpoints a committing writer runs itself are counted, with the pages it copied and how long it held
    /// the writer, and the log starts over after each. (The thread is never woken here: a checkpoint waits for
    /// more pages than the test writes, and the writer may finish up to 1,000.)
    @Test func theWritersOwnCheckpointsAreCounted() async throws {
        let path = TestDatabases.temporaryFile()
        let database = try await TillDatabase.open(
            .sqlite(path: path),
            walCheckpointPages: .max,
            walRestartPages: 100,
            walFinishPages: 1000
        )
        try await database.sql.raw("CREATE TABLE filler (n INTEGER PRIMARY KEY, text TEXT NOT NULL)").run()
        let page = String(repeating: "x", count: 3000)
        for n in 0..<350 {
            try await database.transaction { db in
                try await db.raw("INSERT INTO filler (n, text) VALUES (\(bind: n), \(bind: page))").run()
            }
        }
        let finished = try #require(database.walWriterCheckpoints)
        #expect(finished.count >= 3, "\(finished)")
        #expect((100..<120).contains(finished.largest), "\(finished)")
        #expect(finished.pages >= 300 && finished.held > .zero && finished.longest > .zero, "\(finished)")
        #expect(try #require(database.walCheckpoints) == 0)
        let walSize = try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int ?? 0
        #expect(walSize < 120 * (4096 + 24), "the log is \(walSize) bytes")
        try await database.shutdown()
    }

    /// The pages a commit appends are the B-trees it writes: an index on the table costs one more page a row.
    @Test func eachIndexAChangeWritesIsAPageMore() async throws {
        let database = try await TillDatabase.open(.sqlite(path: TestDatabases.temporaryFile()))
        try await database.sql.raw("CREATE TABLE plain (id TEXT PRIMARY KEY, at BIGINT NOT NULL) WITHOUT ROWID").run()
        try await database.sql.raw("CREATE TABLE indexed (id TEXT PRIMARY KEY, at BIGINT NOT NULL) WITHOUT ROWID").run()
        try await database.sql.raw("CREATE INDEX indexed_at ON indexed (at)").run()
        func pages(inserting table: String, _ n: Int) async throws -> Int {
            let before = try #require(database.walPagesAppended)
            try await database.transaction { db in
                try await db.raw("INSERT INTO \(unsafeRaw: table) (id, at) VALUES (\(bind: "row-\(n)"), \(bind: n))")
                    .run()
            }
            return try #require(database.walPagesAppended) - before
        }
        for n in 0..<3 {
            let plain = try await pages(inserting: "plain", n)
            let indexed = try await pages(inserting: "indexed", n)
            #expect(plain == 1 && indexed == 2, "plain \(plain), indexed \(indexed)")
        }
        try await database.shutdown()
    }
}
