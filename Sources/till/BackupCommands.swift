import ArgumentParser
import Foundation
import TillServer
import TillStorage

/// The database `till serve` uses, as `till backup` and `till restore` are told it: `--database-url`, then
/// `TILL_DATABASE_URL`, then serve's default.
struct DatabaseOption: ParsableArguments {
    @Option(help: "The server's database: an SQLite file or postgres://… (default: $TILL_DATABASE_URL, then till.sqlite).")
    var databaseURL: String?

    func configuration() throws -> DatabaseConfiguration {
        let url = databaseURL ?? ProcessInfo.processInfo.environment["TILL_DATABASE_URL"] ?? "till.sqlite"
        do {
            return try DatabaseConfiguration(parsing: url)
        } catch {
            throw ValidationError("\(error)")
        }
    }
}

/// Prints what a check found, and fails when the copy is not whole.
func show(_ report: DatabaseBackup.Report, _ what: String) throws {
    for problem in report.problems { print("✗ \(problem)") }
    for note in report.notes { print("· \(note)") }
    guard report.isWhole else { throw ExitCode(1) }
    print(
        "✓ \(what): whole; \(report.migrations) migrations, \(report.transactions) transactions, "
            + "\(report.customers) customers, \(report.events) events; balances and ledger agree"
    )
}

/// Maps the backup's failures to a message and exit status 1.
func reporting(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let failure as DatabaseBackup.Failure {
        print("✗ \(failure)")
        throw ExitCode(1)
    }
}

/// `till backup --to FILE`: a consistent copy of the server's database while it runs.
struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy the server's database while it runs, consistently, then check the copy.",
        discussion: """
            SQLite: a new file (VACUUM INTO) as of one moment, checked as till check does. PostgreSQL: \
            pg_dump --format=custom. See docs/operations.md, "Backing up".
            """
    )

    @OptionGroup var database: DatabaseOption
    @Option(help: "The new file to write (never overwritten).") var to: String

    func run() async throws {
        try await reporting {
            let source = try database.configuration()
            let report = try await DatabaseBackup.backup(source, to: to)
            if case .postgres = source {
                for note in report.notes { print("✓ \(note)") }
            } else {
                try show(report, to)
            }
        }
    }
}

/// `till check FILE`: is a copy whole?
struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check a database or a backup: integrity, migrations, and that balances and the ledger agree.",
        discussion:
            "Exits 1 when it is not whole. Changes no data (opening an SQLite file sets it to WAL mode, as the server "
            + "does, so the file must be writable). See docs/operations.md, \"Backing up\"."
    )

    @Argument(help: "An SQLite file (a backup, or a stopped server's database).") var file: String?
    @OptionGroup var database: DatabaseOption

    func run() async throws {
        try await reporting {
            let target = try file.map { try DatabaseConfiguration(parsing: $0) } ?? database.configuration()
            try show(try await DatabaseBackup.check(target), file ?? "\(target)")
        }
    }
}

/// `till restore --from FILE`: a backup back in place.
struct RestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Put a backup in place as the server's database (the server stopped), after checking it.",
        discussion: """
            SQLite: the checked copy replaces the file (with --replace) once no server has it open. PostgreSQL: \
            pg_restore into an empty database. See docs/operations.md, "Backing up".
            """
    )

    @Option(help: "The backup to restore.") var from: String
    @OptionGroup var database: DatabaseOption
    @Flag(help: "Replace an existing SQLite database (a server must not have it open).") var replace = false

    func run() async throws {
        try await reporting {
            let destination = try database.configuration()
            let report = try await DatabaseBackup.restore(from: from, to: destination, replace: replace)
            try show(report, "\(destination)")
        }
    }
}
