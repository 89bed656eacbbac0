import Foundation
import Logging
import Subprocess
import SystemPackage
import TillCatalogue
import TillLedger
import TillStorage

/// An operator's backup, check and restore of the server's database (`till backup`, `till check`, `till restore`;
/// docs/operations.md, "Backing up").
///
/// - SQLite: the copy is `VACUUM INTO` a new file, consistent as of one moment while the server goes on taking
///   purchases; it is checked before the command says it is done. A restore checks the copy, refuses while a
///   server has the destination open, and puts the file in place whole (a copy, then a rename).
/// - PostgreSQL: `pg_dump --format=custom` (one snapshot, so consistent too) and `pg_restore` into an empty
///   database; both must be on the `PATH` (Debian's `postgresql-client`).
public enum DatabaseBackup {
    /// Why a backup, a check or a restore could not be done.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// The backup's or the restore's destination already exists: nothing was overwritten.
        case destinationExists(String)
        /// The restore's SQLite destination exists and `replace` was not given.
        case wouldReplace(String)
        /// The file to check or restore from does not exist.
        case missing(String)
        /// The path to check or restore from is a file that is neither an SQLite database nor a backup, or a folder.
        case notADatabase(String)
        /// A server has the SQLite database open (it holds `<file>.lock`).
        case inUse(String)
        /// `pg_dump` or `pg_restore` is not on the `PATH`.
        case toolMissing(String)
        /// `pg_dump` or `pg_restore` failed.
        case toolFailed(tool: String, status: Int32, output: String)
        /// The copy is not whole: what the check found.
        case checkFailed([String])
        /// An in-memory database has nothing to back up.
        case inMemory
        /// The file is a backup of the other engine's: a `pg_dump` given as an SQLite file, or an SQLite file given
        /// to restore into PostgreSQL.
        case otherEngine(path: String, isPostgresDump: Bool)
        /// The PostgreSQL database to restore into has tables already: nothing was restored.
        case notEmpty(tables: Int)

        public var description: String {
            switch self {
            case .destinationExists(let path): "\(path) already exists: choose a new file (nothing was overwritten)"
            case .wouldReplace(let path): "\(path) exists: pass --replace to replace it (its server stopped)"
            case .missing(let path): "no database at \(path)"
            case .notADatabase(let path):
                "\(path) is not a database file: neither an SQLite database nor a PostgreSQL backup (pg_dump)"
            case .inUse(let path):
                "a till serve has \(path) open: stop it before restoring over its database"
            case .toolMissing(let tool):
                "\(tool) is not on the PATH: install PostgreSQL's client tools (Debian: postgresql-client)"
            case .toolFailed(let tool, let status, let output):
                "\(tool) failed (\(status)): \(output.trimmingCharacters(in: .whitespacesAndNewlines).suffix(2000))"
            case .checkFailed(let problems): "the copy is not whole: " + problems.joined(separator: "; ")
            case .inMemory: "an in-memory database has nothing to back up or restore"
            case .otherEngine(let path, true):
                "\(path) is a PostgreSQL backup (pg_dump): restore it into an empty PostgreSQL database (till restore "
                    + "--from \(path) --database-url postgres://…), then check that database (till check --database-url …)"
            case .otherEngine(let path, false):
                "\(path) is an SQLite database: restore it as an SQLite file (--database-url /path/till.sqlite)"
            case .notEmpty(let tables):
                "the database to restore into has \(tables) table\(tables == 1 ? "" : "s") already: restore into an empty "
                    + "database (createdb till_restored), nothing was restored"
            }
        }
    }

    /// What `check` found. `problems` make a copy unfit to restore; `notes` do not.
    public struct Report: Sendable, Equatable {
        public var problems: [String] = []
        public var notes: [String] = []
        /// Migrations applied, of this build's.
        public var migrations = 0
        public var transactions = 0
        public var customers = 0
        public var events = 0

        public var isWhole: Bool { problems.isEmpty }
    }

    // MARK: Backup

    /// A database as the one-shot commands open it: a failure is thrown and said once by the command (`Error: …`),
    /// not also logged as a serving server's storage outage is ("requests wait up to 5 s for it, then get 503").
    static func open(_ configuration: DatabaseConfiguration) async throws -> TillDatabase {
        var logger = Logger(label: "till.database")
        logger.logLevel = .critical
        return try await TillDatabase.open(configuration, logger: logger)
    }

    /// Copies the database at `source` to the new file `destination` while it may be in use, then checks the
    /// copy (SQLite). For PostgreSQL, `pg_dump --format=custom --file destination`.
    public static func backup(_ source: DatabaseConfiguration, to destination: String) async throws -> Report {
        guard !FileManager.default.fileExists(atPath: destination) else { throw Failure.destinationExists(destination) }
        switch source {
        case .sqliteInMemory:
            throw Failure.inMemory
        case .sqlite(let path):
            guard FileManager.default.fileExists(atPath: path) else { throw Failure.missing(path) }
            let database = try await Self.open(source)
            do {
                try await database.copySQLite(to: destination)
            } catch {
                try? await database.shutdown()
                throw error
            }
            try await database.shutdown()
            let report = try await check(.sqlite(path: destination))
            guard report.isWhole else {
                // A copy that is not whole is no backup: it goes, so that the next attempt can use the name.
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: destination + suffix) }
                throw Failure.checkFailed(report.problems)
            }
            return report
        case .postgres(let url):
            try await run("pg_dump", ["--format=custom", "--no-owner", "--file", destination, "--dbname", plain(url)])
            return Report(notes: ["pg_dump wrote \(destination); till restore puts it into an empty database"])
        }
    }

    // MARK: Check

    /// Integrity (SQLite's page check), migrations (none this build does not know; missing ones are a note, as
    /// `till serve` applies them at start) and the books (balances and ledger agree). Writes nothing.
    public static func check(_ configuration: DatabaseConfiguration) async throws -> Report {
        if case .sqlite(let path) = configuration, !FileManager.default.fileExists(atPath: path) {
            throw Failure.missing(path)
        }
        if configuration == .sqliteInMemory { throw Failure.inMemory }
        if case .sqlite(let path) = configuration {
            switch Self.format(of: path) {
            case .postgresDump: throw Failure.otherEngine(path: path, isPostgresDump: true)
            case .sqlite: break
            // SQLite takes an empty file for an empty database (its check then finds no schema); a folder, or a file
            // with other bytes, is said to be neither, not in SQLite's words ("file is not a database").
            case .other: if !Self.isEmptyFile(path) { throw Failure.notADatabase(path) }
            }
        }
        let database = try await Self.open(configuration)
        do {
            var report = Report()
            report.problems += try await database.integrityProblems()
            let applied = try await database.appliedMigrations(schema: ServerSchema.name)
            let known = ServerSchema.migrations.map(\.id)
            let unknown = applied.filter { !known.contains($0) }
            if !unknown.isEmpty {
                report.problems.append(
                    "migrations \(unknown.joined(separator: ", ")) are from a newer release than this build"
                )
            }
            let missing = known.filter { !applied.contains($0) }
            report.migrations = known.count - missing.count
            if applied.isEmpty {
                report.problems.append("no Till server schema: not a database of till serve")
            } else if !missing.isEmpty {
                report.notes.append(
                    "\(missing.count) migration\(missing.count == 1 ? "" : "s") of this build to apply "
                        + "(till serve applies them at start): \(missing.joined(separator: ", "))"
                )
            }
            if !applied.isEmpty, unknown.isEmpty, report.problems.isEmpty {
                report.problems += try await LedgerAudit.disagreements(in: database)
                let counts = try await PurchaseStore(database: database).counts()
                report.transactions = counts.transactions
                report.customers = counts.customers
                report.events = counts.events
            }
            try await database.shutdown()
            return report
        } catch {
            try? await database.shutdown()
            throw error
        }
    }

    // MARK: Restore

    /// Puts the backup `source` in place as the database `destination`: an SQLite file (refused while a server
    /// has it open; an existing one is replaced only with `replace`), or an empty PostgreSQL database
    /// (`pg_restore`). An SQLite backup is checked first, and a copy that is not whole is refused.
    public static func restore(from source: String, to destination: DatabaseConfiguration, replace: Bool)
        async throws -> Report
    {
        guard FileManager.default.fileExists(atPath: source) else { throw Failure.missing(source) }
        switch destination {
        case .sqliteInMemory:
            throw Failure.inMemory
        case .sqlite(let path):
            let report = try await check(.sqlite(path: source))
            guard report.isWhole else { throw Failure.checkFailed(report.problems) }
            if FileManager.default.fileExists(atPath: path) && !replace { throw Failure.wouldReplace(path) }
            // The server's own lock: held, a server has the file open. Every server makes the lock file at start, so
            // without one none runs; it is not made here (made by root, the server's user could not open it).
            var lock: SQLiteQueueLock?
            if FileManager.default.fileExists(atPath: path + ".lock") {
                do {
                    lock = try SQLiteQueueLock.acquire(for: destination)
                } catch {
                    throw Failure.inUse(path)
                }
            }
            defer { lock?.release() }
            let staging = path + ".restoring"
            try? FileManager.default.removeItem(atPath: staging)
            try FileManager.default.copyItem(atPath: source, toPath: staging)
            // The owner and mode of the file it replaces (or of its folder): restored by root for a server that runs
            // as its own user, the file stays that user's.
            let model =
                FileManager.default.fileExists(atPath: path) ? path : (path as NSString).deletingLastPathComponent
            if let attributes = try? FileManager.default.attributesOfItem(atPath: model.isEmpty ? "." : model) {
                var keep: [FileAttributeKey: Any] = [:]
                keep[.ownerAccountID] = attributes[.ownerAccountID]
                keep[.groupOwnerAccountID] = attributes[.groupOwnerAccountID]
                if model == path { keep[.posixPermissions] = attributes[.posixPermissions] }
                try? FileManager.default.setAttributes(keep, ofItemAtPath: staging)
            }
            // The old file's log belongs to the old file.
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            guard rename(staging, path) == 0 else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
            }
            return report
        case .postgres(let url):
            if Self.format(of: source) == .sqlite { throw Failure.otherEngine(path: source, isPostgresDump: false) }
            // pg_restore into a database that has tables fails part of the way, with its own words, and leaves what
            // it made: refused before it starts, as an SQLite destination that exists is.
            // A database that cannot be reached (missing, a wrong password) is left to pg_restore, whose libpq message
            // names the cause; PostgresNIO's error text is kept generic on purpose.
            if let tables = try? await Self.tableNames(of: destination), !tables.isEmpty {
                throw Failure.notEmpty(tables: tables.count)
            }
            try await run("pg_restore", ["--no-owner", "--exit-on-error", "--dbname", plain(url), source])
            return try await check(destination)
        }
    }

    /// The tables of a database, or an error when it cannot be reached.
    static func tableNames(of configuration: DatabaseConfiguration) async throws -> [String] {
        let database = try await Self.open(configuration)
        do {
            let tables = try await database.tableNames()
            try await database.shutdown()
            return tables
        } catch {
            try? await database.shutdown()
            throw error
        }
    }

    /// A regular file of no bytes.
    static func isEmptyFile(_ path: String) -> Bool {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return false }
        return attributes[.type] as? FileAttributeType == .typeRegular && (attributes[.size] as? Int ?? -1) == 0
    }

    /// What a backup file is, by its first bytes.
    enum FileFormat { case sqlite, postgresDump, other }

    /// SQLite's header (`SQLite format 3` and a NUL) or pg_dump's custom format (`PGDMP`); an unreadable or short file
    /// is `other`, left to the engine to refuse in its words.
    static func format(of path: String) -> FileFormat {
        guard let handle = FileHandle(forReadingAtPath: path) else { return .other }
        defer { try? handle.close() }
        let head = Array(((try? handle.read(upToCount: 16)) ?? nil) ?? Data())
        if head == Array("SQLite format 3\0".utf8) { return .sqlite }
        if head.starts(with: Array("PGDMP".utf8)) { return .postgresDump }
        return .other
    }

    // MARK: PostgreSQL's tools

    /// The URL without its query (`?sslmode=…`), which libpq's tools read from the environment instead.
    static func plain(_ url: String) -> String {
        String(url.split(separator: "?", maxSplits: 1)[0])
    }

    /// Runs one of PostgreSQL's tools to its end through swift-subprocess, which finds it on the `PATH` and reads its
    /// output without blocking a thread; anything but exit code 0 is `toolFailed` with what it printed.
    static func run(_ tool: String, _ arguments: [String]) async throws {
        let result: ExecutionResult<Void, StringOutput<UTF8>, CombinedErrorOutput>
        do {
            result = try await Subprocess.run(
                .name(tool),
                arguments: Arguments(arguments),
                output: .string(limit: 16 << 20),
                error: .combinedWithOutput
            )
        } catch let error as SubprocessError where error.code == .executableNotFound {
            throw Failure.toolMissing(tool)
        }
        guard case .exited(0) = result.terminationStatus else {
            let status: Int32 =
                switch result.terminationStatus {
                case .exited(let code): code
                case .signaled(let signal): signal
                }
            throw Failure.toolFailed(tool: tool, status: status, output: result.standardOutput)
        }
    }
}
