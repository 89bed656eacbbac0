import AsyncHTTPClient
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import SQLKit
import Synchronization
import Testing
import TillCatalogue
import TillContract
import TillCore
import TillLedger
import TillSimulator
import TillStorage
import TillTestSupport

@testable import TillServer

/// `till backup`, `till check` and `till restore` as an operator runs them, against a `till serve` taking purchases:
/// the copy holds every purchase acknowledged before the backup began and every event up to its moment, nothing is
/// credited twice, and the restored database serves.
// Ten minutes a test case: under `swift test` beside the other suites, each engine's case took 160 s on this
// 2-core machine (90 purchases through a `till serve` child, a backup, a restore and a check, each a child process),
// and CI's busier run of d0611aa passed 300 s on SQLite.
@Suite(
    .sharingTheMachine,
    .serialized,
    .timeLimit(.minutes(10)),
    .enabled(if: Prerequisite.tillExecutable.shouldRun, Comment(rawValue: Prerequisite.tillExecutable.skipMessage))
)
struct BackupTests {
    /// How many purchases have been acknowledged so far, shared by the tasks that send them and the one that waits.
    final class Tally: Sendable {
        let count = Mutex(0)
    }

    /// A purchase submitted under load, and when its acknowledgement arrived.
    struct Sent: Sendable {
        var index: Int
        var transactionId: String
        var acknowledged: ContinuousClock.Instant?
    }

    @Test(arguments: TestDatabase.all) func aBackupUnderLoadRestoresEveryAcknowledgedPurchaseOnce(
        _ engine: TestDatabase
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "till-backup-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let till = try TillExecutable.require().path
        // The databases: the server's, and the one the backup is restored into.
        var created: [String] = []
        func database(_ name: String) async throws -> String {
            switch engine {
            case .sqlite:
                return directory.appendingPathComponent("\(name).sqlite").path
            case .postgres:
                try Prerequisite.postgres.require()
                let server = try #require(TestDatabase.postgresURL)
                let database = "till_backup_\(name)_\(UUID().uuidString.prefix(8).lowercased())"
                let admin = try await TillDatabase.open(.postgres(url: server))
                try await admin.sql.raw("CREATE DATABASE \(unsafeRaw: database)").run()
                try await admin.shutdown()
                created.append(database)
                return server.replacingOccurrences(
                    of: "/\(URL(string: server)!.lastPathComponent)",
                    with: "/\(database)"
                )
            }
        }
        let live = try await database("live")
        let restored = try await database("restored")
        let backupFile = directory.appendingPathComponent(engine == .sqlite ? "backup.sqlite" : "backup.dump").path

        let simulator = try await Simulator.open(SimulatorConfiguration(keys: .shared))
        let http = HTTPClient.shared
        let acknowledgedBefore = Mutex<[Sent]>([])
        do {
            try await withServices({ buildSimulatorApplication(simulator, port: 0, onServerRunning: $0) }) { port in
                let world = try await World.make(simulator: simulator, directory: directory, simulatorPort: port)
                let count = 90
                var purchases: [(String, String)] = []
                for _ in 0..<count {
                    let purchase = try await simulator.payments.addPayment(
                        PaymentRequest(
                            deviceId: world.device,
                            bundleId: world.simulatorApp.bundleId,
                            productId: "gems.100"
                        ),
                        environment: .sandbox
                    )
                    purchases.append((try #require(purchase.signedTransaction), try #require(purchase.transactionId)))
                }
                let server = try await TillProcess.start(
                    world,
                    databaseURL: live,
                    environment: ["TILL_CATCH_UP_INTERVAL_SECONDS": "0"]
                )
                do {
                    let app = try await world.register(on: server, http: http)
                    // 90 purchases at 30 a second; the backup starts once 15 of them are acknowledged, not at a
                    // fixed time: on a loaded machine the first second may see only a handful answered.
                    let clock = ContinuousClock()
                    let signed = purchases
                    let acknowledgedSoFar = Tally()
                    let (sent, backupStarted, backupOutput) = try await withThrowingTaskGroup(
                        of: (Sent?, ContinuousClock.Instant?, String?).self
                    ) { group in
                        for index in 0..<count {
                            group.addTask {
                                try await Task.sleep(for: .milliseconds(33 * index))
                                let status = try await world.submit(
                                    signed[index].0,
                                    index: index,
                                    to: server,
                                    app: app,
                                    http: http
                                )
                                let done = [200, 202].contains(status) ? clock.now : nil
                                if done != nil { acknowledgedSoFar.count.withLock { $0 += 1 } }
                                return (
                                    Sent(index: index, transactionId: signed[index].1, acknowledged: done), nil, nil
                                )
                            }
                        }
                        group.addTask {
                            let deadline = clock.now.advanced(by: .seconds(60))
                            while acknowledgedSoFar.count.withLock({ $0 }) < 15 && clock.now < deadline {
                                try await Task.sleep(for: .milliseconds(10))
                            }
                            let started = clock.now
                            let (status, output) = try await ChildProcess.run(
                                till,
                                ["backup", "--database-url", live, "--to", backupFile]
                            )
                            try #require(status == 0, "till backup: \(output)")
                            return (nil, started, output)
                        }
                        var sent: [Sent] = []
                        var started: ContinuousClock.Instant?
                        var output = ""
                        for try await (one, start, printed) in group {
                            if let one { sent.append(one) }
                            if let start { started = start }
                            if let printed { output = printed }
                        }
                        return (sent, try #require(started), output)
                    }
                    #expect(sent.allSatisfy { $0.acknowledged != nil }, "a submission was refused under load")
                    let before = sent.filter { $0.acknowledged.map { $0 < backupStarted } ?? false }
                    acknowledgedBefore.withLock { $0 = before }
                    let after = sent.filter { $0.acknowledged.map { $0 > backupStarted } ?? false }
                    #expect(
                        before.count >= 10 && after.count >= 10,
                        "the backup was not under load: \(before.count) before, \(after.count) after"
                    )
                    if engine == .sqlite {
                        #expect(backupOutput.contains("✓") && backupOutput.contains("agree"), "\(backupOutput)")
                    }
                } catch {
                    await server.stop()
                    throw DeploymentFailure(error: error, server: server.output)
                }
                #expect(await server.stop() == 0)

                // Restored into a database of its own, as an operator would after losing the live one.
                let (restoreStatus, restoreOutput) = try await ChildProcess.run(
                    till,
                    ["restore", "--from", backupFile, "--database-url", restored]
                )
                #expect(restoreStatus == 0, "till restore: \(restoreOutput)")
                let (checkStatus, checkOutput) = try await ChildProcess.run(
                    till,
                    engine == .sqlite ? ["check", restored] : ["check", "--database-url", restored]
                )
                #expect(checkStatus == 0 && checkOutput.contains("balances and ledger agree"), "\(checkOutput)")
                if engine == .postgres {
                    // A second restore into the database that now has tables is refused before pg_restore starts
                    // (it would fail part of the way, in its own words); the dump checked as an SQLite file, or an
                    // SQLite file restored into PostgreSQL, is told which engine's it is.
                    let (againStatus, againOutput) = try await ChildProcess.run(
                        till,
                        ["restore", "--from", backupFile, "--database-url", restored]
                    )
                    #expect(againStatus != 0, "\(againOutput)")
                    #expect(againOutput.contains("restore into an empty database"), "\(againOutput)")
                    #expect(!againOutput.contains("pg_restore"), "\(againOutput)")
                    // A database that is not there is said in libpq's words, not PostgresNIO's generic ones.
                    let missing = restored.replacingOccurrences(
                        of: "/\(URL(string: restored)!.lastPathComponent)",
                        with: "/till_backup_missing_\(UUID().uuidString.prefix(8).lowercased())"
                    )
                    let (missingStatus, missingOutput) = try await ChildProcess.run(
                        till,
                        ["restore", "--from", backupFile, "--database-url", missing]
                    )
                    #expect(missingStatus != 0 && missingOutput.contains("does not exist"), "\(missingOutput)")
                    let (dumpStatus, dumpOutput) = try await ChildProcess.run(till, ["check", backupFile])
                    #expect(dumpStatus != 0 && dumpOutput.contains("is a PostgreSQL backup (pg_dump)"), "\(dumpOutput)")
                    let sqliteFile = directory.appendingPathComponent("other.sqlite").path
                    let other = try await TillDatabase.open(.sqlite(path: sqliteFile))
                    try await other.sql.raw("CREATE TABLE t (x INTEGER)").run()
                    try await other.shutdown()
                    let wrongEngine = DatabaseBackup.Failure.otherEngine(path: sqliteFile, isPostgresDump: false)
                    await #expect(throws: wrongEngine) {
                        try await DatabaseBackup.restore(from: sqliteFile, to: .postgres(url: restored), replace: false)
                    }
                }
            }
            try await verify(
                restored: restored,
                live: live,
                engine: engine,
                acknowledgedBefore: acknowledgedBefore.withLock { $0 }
            )
        } catch {
            try? await simulator.shutdown()
            await drop(created)
            throw error
        }
        try await simulator.shutdown()
        await drop(created)
    }

    func drop(_ databases: [String]) async {
        guard !databases.isEmpty, let server = TestDatabase.postgresURL,
            let admin = try? await TillDatabase.open(.postgres(url: server))
        else { return }
        for name in databases {
            try? await admin.sql.raw("DROP DATABASE IF EXISTS \(unsafeRaw: name) WITH (FORCE)").run()
        }
        try? await admin.shutdown()
    }

    /// The restored database against the live one (both stopped): every purchase acknowledged before the backup
    /// began is in it; each customer's gems are exactly 100 for each of their purchases in it (none credited twice);
    /// its events are the live events up to one moment, the same and in the same order.
    func verify(restored: String, live: String, engine: TestDatabase, acknowledgedBefore: [Sent]) async throws {
        let configuration = { (url: String) in try DatabaseConfiguration(parsing: url) }
        let copy = try await PurchaseServer.open(
            ServerConfiguration(database: try configuration(restored), operatorToken: "operator")
        )
        let original = try await PurchaseServer.open(
            ServerConfiguration(database: try configuration(live), operatorToken: "operator")
        )
        do {
            let transactions = Set(
                try await copy.database.sql.raw("SELECT transaction_id FROM srv_transactions").all()
                    .map { try $0.decode(column: "transaction_id", as: String.self) }
            )
            let missing = acknowledgedBefore.filter { !transactions.contains($0.transactionId) }
            #expect(missing.isEmpty, "acknowledged before the backup, missing from it: \(missing.map(\.index))")
            let liveCount =
                try await original.database.sql.raw("SELECT COUNT(*) AS n FROM srv_transactions").first()?
                .decode(column: "n", as: Int64.self) ?? 0
            #expect(transactions.count <= Int(liveCount) && transactions.count >= acknowledgedBefore.count)
            for customer in ["ana", "ben", "cyd"] {
                let bought =
                    try await copy.database.sql.raw(
                        "SELECT COUNT(*) AS n FROM srv_transactions WHERE customer_id = \(bind: customer)"
                    ).first()?.decode(column: "n", as: Int64.self) ?? 0
                let view = try await copy.customers.customer(bundleId: "com.example.crash", customerId: customer)
                #expect(
                    (view.balances.additionalProperties["gems"] ?? 0) == Int(bought) * 100,
                    "\(customer): \(view.balances)"
                )
            }
            try await Application(router: buildServerRouter(copy)).test(.router) { restoredClient in
                try await Application(router: buildServerRouter(original)).test(.router) { liveClient in
                    let path = "/admin/v1/events?bundleId=com.example.crash&limit=1000"
                    let restoredEvents =
                        try await restoredClient.call(.get, path, token: "operator").object["items"] as? [[String: Any]]
                        ?? []
                    let liveEvents =
                        try await liveClient.call(.get, path, token: "operator").object["items"] as? [[String: Any]]
                        ?? []
                    #expect(
                        restoredEvents.count >= acknowledgedBefore.count && restoredEvents.count <= liveEvents.count
                    )
                    for (index, event) in restoredEvents.enumerated() {
                        #expect(
                            NSDictionary(dictionary: event).isEqual(to: liveEvents[index]),
                            "event \(index) differs"
                        )
                    }
                }
            }
        } catch {
            try? await copy.shutdown()
            try? await original.shutdown()
            throw error
        }
        try await copy.shutdown()
        try await original.shutdown()
    }

    /// What a restore or a backup refuses, and that it then leaves everything as it was: a destination that exists,
    /// a database a server has open, a copy whose books disagree, a copy from a newer release.
    @Test func refusalsLeaveEverythingAsItWas() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "till-backup-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        // A folder, or a file that is neither a database nor a backup, is said so, not in SQLite's words.
        try Data("not a database".utf8).write(to: URL(fileURLWithPath: path("notes.txt")))
        for wrong in [path("notes.txt"), directory.path] {
            await #expect(throws: DatabaseBackup.Failure.notADatabase(wrong)) {
                try await DatabaseBackup.check(.sqlite(path: wrong))
            }
        }
        let live = try await PurchaseServer.open(
            ServerConfiguration(database: .sqlite(path: path("live.sqlite")), operatorToken: "operator")
        )
        _ = try await live.catalogue.createApp(ServerAppInput(bundleId: "com.example.refusals", appAppleId: 42))
        // A backup of a database a server has open is what backups are for.
        let report = try await DatabaseBackup.backup(.sqlite(path: path("live.sqlite")), to: path("copy.sqlite"))
        #expect(report.isWhole && report.migrations == ServerSchema.migrations.count)
        await #expect(throws: DatabaseBackup.Failure.destinationExists(path("copy.sqlite"))) {
            try await DatabaseBackup.backup(.sqlite(path: path("live.sqlite")), to: path("copy.sqlite"))
        }
        // Restoring over the live database: refused while its server runs, and without --replace.
        await #expect(throws: DatabaseBackup.Failure.wouldReplace(path("live.sqlite"))) {
            try await DatabaseBackup.restore(
                from: path("copy.sqlite"),
                to: .sqlite(path: path("live.sqlite")),
                replace: false
            )
        }
        await #expect(throws: DatabaseBackup.Failure.inUse(path("live.sqlite"))) {
            try await DatabaseBackup.restore(
                from: path("copy.sqlite"),
                to: .sqlite(path: path("live.sqlite")),
                replace: true
            )
        }
        try await live.shutdown()
        // A copy whose books disagree is not restored, and the destination is left alone.
        try FileManager.default.copyItem(atPath: path("copy.sqlite"), toPath: path("bad.sqlite"))
        let bad = try await TillDatabase.open(.sqlite(path: path("bad.sqlite")))
        try await bad.sql.raw(
            "INSERT INTO srv_balances (bundle_id, customer_id, credit, balance) VALUES ('com.example.refusals', 'eve', 'gems', 500)"
        ).run()
        try await bad.sql.raw(
            "INSERT INTO till_schema_migrations (schema, id, applied_at) VALUES ('server', '999-newer', 0)"
        ).run()
        try await bad.shutdown()
        let checked = try await DatabaseBackup.check(.sqlite(path: path("bad.sqlite")))
        #expect(checked.problems.contains { $0.contains("999-newer") }, "\(checked.problems)")
        let before = try Data(contentsOf: URL(fileURLWithPath: path("live.sqlite")))
        await #expect(throws: DatabaseBackup.Failure.self) {
            try await DatabaseBackup.restore(
                from: path("bad.sqlite"),
                to: .sqlite(path: path("live.sqlite")),
                replace: true
            )
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path("live.sqlite"))) == before)
        // Without the newer migration, the disagreeing balance is what the check names.
        let fixed = try await TillDatabase.open(.sqlite(path: path("bad.sqlite")))
        try await fixed.sql.raw("DELETE FROM till_schema_migrations WHERE id = '999-newer'").run()
        try await fixed.shutdown()
        let books = try await DatabaseBackup.check(.sqlite(path: path("bad.sqlite")))
        #expect(books.problems == ["the balance of gems of eve (com.example.refusals) is 500; its entries sum to 0"])
        // With the server stopped and --replace, the good copy goes in place, owned as the file it replaces (a
        // restore run by root for a server that runs as its own user), and serves.
        let owner = getuid() == 0 ? 4242 : Int(getuid())
        try FileManager.default.setAttributes(
            [.ownerAccountID: owner, .posixPermissions: 0o640],
            ofItemAtPath: path("live.sqlite")
        )
        let restored = try await DatabaseBackup.restore(
            from: path("copy.sqlite"),
            to: .sqlite(path: path("live.sqlite")),
            replace: true
        )
        #expect(restored.isWhole)
        let attributes = try FileManager.default.attributesOfItem(atPath: path("live.sqlite"))
        #expect((attributes[.ownerAccountID] as? NSNumber)?.intValue == owner)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o640)
        let reopened = try await PurchaseServer.open(
            ServerConfiguration(database: .sqlite(path: path("live.sqlite")), operatorToken: "operator")
        )
        #expect(try await reopened.catalogue.app(bundleId: "com.example.refusals") != nil)
        try await reopened.shutdown()
    }
}
