import Foundation
import Testing
import TillJobs
import TillLedger
import TillTestSupport

/// Rules of the server's layout that the compiler does not check (docs/architecture.md).
@Suite(.sharingTheMachine)
struct LayoutTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The targets of the app's package (Client/): what an app links.
    static let clientTargets: Set<String> = [
        "TillClient", "TillCore", "TillContract", "TillSimulatorContract", "TillSnapshot",
    ]

    /// The server's modules: TillServer and the rooms below it that are targets of their own. Each rule of the
    /// server's layout below holds in all of them.
    static let serverModules = [
        "TillServer", "TillLedger", "TillJobs", "TillCatalogue", "TillWebhooks", "TillContent", "TillConsole",
        "TillAppStore",
    ]

    /// A target's folder, relative to the repository: `Sources/<target>`, or `Client/Sources/<target>` for the app's
    /// package.
    static func folder(of target: String) -> String {
        (clientTargets.contains(target) ? "Client/Sources/" : "Sources/") + target
    }

    /// The Swift files of a target's folder, as paths relative to it.
    static func files(of target: String) throws -> [String] {
        try #require(FileManager.default.enumerator(atPath: root.appendingPathComponent(folder(of: target)).path))
            .compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }
    }

    /// Every SQL statement of the server and of the simulator is in its store layer (`Store/`), behind a name:
    /// services call `store.…`, and a query's shape can be read, changed and indexed in one place.
    @Test(arguments: serverModules + ["TillSimulator"])
    func allSQLLivesInTheStoreLayer(
        _ target: String
    )
        throws
    {
        let sources = Self.root.appendingPathComponent("Sources/" + target)
        let patterns = [
            ".raw(", ".select()", ".update(\"", ".insert(into", ".delete(from", "SELECT ", "UPDATE srv_",
            "INSERT INTO", "DELETE FROM",
        ]
        let files = try Self.files(of: target).filter { !$0.hasPrefix("Store/") }
        #expect(files.count >= (["TillServer", "TillSimulator"].contains(target) ? 10 : 3), "found only \(files)")
        var offenders: [String] = []
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                if let pattern = patterns.first(where: { line.contains($0) }) {
                    offenders.append("\(file):\(number + 1) (\(pattern))")
                }
            }
        }
        #expect(offenders.isEmpty, "SQL outside Sources/\(target)/Store: \(offenders)")
    }

    /// Each room owns its storage (docs/architecture.md, `Store/`): no store type has more than 40 functions, counted
    /// over every file that declares or extends it. `ServerStore` held 166 before the rooms' stores replaced it, and
    /// the simulator's one `SimulatorStore` 103 before each of its rooms had a store.
    @Test func noStoreHasMoreThanFortyFunctions() throws {
        let declaration = try Regex(#"^(?:public |package |final )*(?:struct|extension|final class|class) (\w+)"#)
        var functions: [String: Int] = [:]
        for target in Self.serverModules + ["TillSimulator"] {
            for file in try Self.files(of: target) where file.hasPrefix("Store/") {
                let text = try String(
                    contentsOf: Self.root.appendingPathComponent("Sources/\(target)/\(file)"),
                    encoding: .utf8
                )
                var type: String?
                for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                    if let match = line.firstMatch(of: declaration) {
                        let name = String(try #require(match.output[1].substring))
                        type = name.hasSuffix("Store") ? name : nil
                    } else if let type, line.hasPrefix("    "), line.contains("func "),
                        line.trimmingCharacters(in: .whitespaces).split(separator: " ").contains("func")
                    {
                        functions[type, default: 0] += 1
                    }
                }
            }
        }
        #expect(functions.count >= 10, "found only \(functions)")
        let large = functions.filter { $0.value > 40 }
        #expect(large.isEmpty, "stores over 40 functions: \(large)")
    }

    /// One queue owns its tables: every statement that writes `srv_jobs` or touches `srv_job_holds` is in TillJobs'
    /// `Store/JobStore.swift` (the migrations aside), behind the job functions `JobQueue` and the rooms' stores call: claiming, attempts, the
    /// schedule and dead letters are decided in one place.
    @Test(arguments: serverModules + ["TillBench", "TillDevelopment"]) func onlyTheJobStoreWritesJobs(
        _ target: String
    ) throws {
        let sources = Self.root.appendingPathComponent("Sources/" + target)
        let writes = [
            "INSERT INTO srv_jobs", "UPDATE srv_jobs", "DELETE FROM srv_jobs", "REPLACE INTO srv_jobs", "\"srv_jobs\"",
            "INTO srv_job_holds", "UPDATE srv_job_holds", "FROM srv_job_holds", "\"srv_job_holds\"",
        ]
        var offenders: [String] = []
        for file in try Self.files(of: target)
        where !["TillJobs/Store/JobStore.swift", "TillServer/Store/ServerSchema.swift"].contains("\(target)/\(file)") {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where writes.contains(where: { line.contains($0) }) {
                offenders.append("\(file):\(number + 1)")
            }
        }
        #expect(offenders.isEmpty, "srv_jobs written outside TillJobs/Store/JobStore.swift: \(offenders)")
    }

    /// Errors at the edge (docs/architecture.md, "One rule, one place"): rooms throw their own refusals
    /// (`Refused<RoomReason>`) and know nothing of HTTP; `TillHTTPError` is made only by the HTTP kit and the servers'
    /// `API/` folders. A file anywhere else that names it is an offender, whatever it does with it.
    @Test func onlyTheHTTPLayerNamesTillHTTPError() throws {
        var offenders: [String] = []
        let targets = try FileManager.default.contentsOfDirectory(
            atPath: Self.root.appendingPathComponent("Sources").path
        )
        for target in targets where target != "TillHTTPKit" {
            for file in try Self.files(of: target) where !file.hasPrefix("API/") && !file.contains("Generated/") {
                let text = try String(
                    contentsOf: Self.root.appendingPathComponent(Self.folder(of: target) + "/" + file),
                    encoding: .utf8
                )
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
                where line.contains("TillHTTPError") {
                    offenders.append("Sources/\(target)/\(file):\(number + 1)")
                }
            }
        }
        #expect(offenders.isEmpty, "TillHTTPError outside the HTTP layer: \(offenders)")
    }

    /// Every room's reasons have their statuses: each `…Reason` a room of the server or the simulator refuses with is
    /// mapped in its `API/RefusalStatuses.swift` (an unmapped one would be answered 500 `internalError`). The
    /// settings' reasons are the exception: they stop `till serve` at start and are never an answer.
    @Test(arguments: ["TillServer", "TillSimulator"]) func everyRoomsRefusalsHaveStatuses(_ target: String) throws {
        let sources = Self.root.appendingPathComponent("Sources/" + target)
        let declaration = try Regex(#"enum (\w+Reason): (?:String, )?RefusalReason"#)
        var reasons: Set<String> = []
        // The server answers for its rooms' refusals too: they have no HTTP layer of their own.
        for room in target == "TillServer" ? Self.serverModules : [target] {
            for file in try Self.files(of: room) {
                let text = try String(
                    contentsOf: Self.root.appendingPathComponent("Sources/\(room)/\(file)"),
                    encoding: .utf8
                )
                for match in text.matches(of: declaration) {
                    reasons.insert(String(try #require(match.output[1].substring)))
                }
            }
        }
        reasons.remove("SettingsReason")
        #expect(reasons.count >= 8, "found only \(reasons)")
        let mapping = try String(
            contentsOf: sources.appendingPathComponent("API/RefusalStatuses.swift"),
            encoding: .utf8
        )
        let unmapped = reasons.filter { !mapping.contains("extension \($0): RefusalStatus") }
        #expect(
            unmapped.isEmpty,
            "reasons without a status in Sources/\(target)/API/RefusalStatuses.swift: \(unmapped)"
        )
    }

    /// Only the ledger writes money, credits and access (docs/architecture.md, "One rule, one place"). The compiler
    /// keeps its writer, `LedgerStore`, inside the TillLedger module (`theLedgersWriterIsInternalToItsModule`), and the
    /// build keeps the ledger's tables' names in it (`theBuildRefusesTheLedgersTablesOutsideTheLedger`). Inside the
    /// module, this keeps the SQL text: every statement that writes the ledger's rows, balance entries, the books or
    /// the renewal state that grants a grace period, or links a guest to an account, is in `Store/LedgerStore.swift`
    /// or its bulk path `LedgerBulkLoad` (the benchmarks' generator), not in the stores that read them. So every change
    /// to them goes through `Ledger`, which records it as an event in the same transaction.
    @Test func onlyTheLedgerWritesMoneyCreditsAndAccess() throws {
        let offenders = try Self.ledgerWrites(in: "TillLedger").filter {
            !["TillLedger/Store/LedgerStore.swift", "TillLedger/Store/LedgerBulkLoad.swift"].contains($0.file)
        }.map { "\($0.file): \($0.what)" }
        #expect(offenders.isEmpty, "money, credits or access written outside the ledger's writer: \(offenders)")
    }

    /// No module but TillLedger names the ledger's tables, to write or to read, whatever the statement's spelling
    /// (`REPLACE INTO`, a name in a variable or an `SQLIdentifier`): each other module's build runs `ledger-tables`
    /// (Plugins/LedgerTables) over its sources before compiling them, and a refusal fails the build. Here the check
    /// is run on planted sources, and every module of Sources/ but TillLedger is seen to have it in Package.swift.
    @Test func theBuildRefusesTheLedgersTablesOutsideTheLedger() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("till-ledger-tables-\(UUID())")
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("Store"),
            withIntermediateDirectories: true
        )
        defer { try? FileManager.default.removeItem(at: folder) }
        let planted = folder.appendingPathComponent("Planted.swift")
        try """
        let update = "UPDATE srv_balances SET balance = balance + 100"
        let replace = "REPLACE INTO srv_finance VALUES ('Sandbox', 't1')"
        // srv_transactions in a comment is not code
        let table = SQLIdentifier("srv_subscription_states")
        let link = "UPDATE srv_customers SET alias_of = 'account'"
        let lookalike = "srv_balances_archive"
        """.write(to: planted, atomically: true, encoding: .utf8)
        // Windows line ends: each line is its own, and a comment on the first hides nothing after it.
        let crlf = folder.appendingPathComponent("CRLF.swift")
        try "// a comment\r\nlet grant = \"INSERT INTO srv_transactions VALUES (1)\"\r\n"
            .write(to: crlf, atomically: true, encoding: .utf8)
        let clean = folder.appendingPathComponent("Clean.swift")
        try #"let read = "SELECT * FROM srv_customers_archive" // the ledger's own tables are not named"#
            .write(to: clean, atomically: true, encoding: .utf8)
        let migrations = folder.appendingPathComponent("Store/ServerSchema.swift")
        try #"let create = "CREATE TABLE srv_balances (balance INTEGER)""#
            .write(to: migrations, atomically: true, encoding: .utf8)
        let output = folder.appendingPathComponent("LedgerTablesChecked.swift")

        let refused = try await TillExecutable.run(
            ["TillContent", folder.path, output.path, planted.path, crlf.path, clean.path],
            program: "ledger-tables"
        )
        #expect(refused.status == 1, "\(refused)")
        let lines = refused.errors.split(separator: "\n").map { String($0) }
        #expect(
            lines.map { $0.components(separatedBy: ": error: ")[0] }
                == [1, 2, 4, 5].map { "\(planted.path):\($0)" } + ["\(crlf.path):2"],
            "\(refused)"
        )
        #expect(lines.allSatisfy { $0.contains("TillContent names the ledger's") }, "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: output.path))

        // The same module without the planted file passes, and its output is made; the migrations are TillServer's.
        let passed = try await TillExecutable.run(
            ["TillServer", folder.path, output.path, clean.path, migrations.path],
            program: "ledger-tables"
        )
        #expect(passed.status == 0, "\(passed)")
        #expect(FileManager.default.fileExists(atPath: output.path))
        // A check run again on what it passed leaves its output as it was: the build compiles the file again only
        // when it changed. (SwiftPM links the tool again whenever it plans a build again, as between `swift build`
        // and `swift test`, and runs every module's check after it: a rewritten file made each module compile again,
        // 25 s of every such `swift test`.)
        let past = Date(timeIntervalSince1970: 1_000_000_000)
        try FileManager.default.setAttributes([.modificationDate: past], ofItemAtPath: output.path)
        func modified() throws -> Date? {
            try FileManager.default.attributesOfItem(atPath: output.path)[.modificationDate] as? Date
        }
        let again = try await TillExecutable.run(
            ["TillServer", folder.path, output.path, clean.path, migrations.path],
            program: "ledger-tables"
        )
        #expect(again.status == 0, "\(again)")
        #expect(try modified() == past, "the check wrote its unchanged output again")
        // Another module's check of the same file writes its own line.
        let other = try await TillExecutable.run(
            ["TillConsole", folder.path, output.path, clean.path],
            program: "ledger-tables"
        )
        #expect(other.status == 0, "\(other)")
        #expect(try modified() != past)
        #expect(try String(contentsOf: output, encoding: .utf8).contains("TillConsole names none"))
        let notMigrations = try await TillExecutable.run(
            ["TillContent", folder.path, output.path, migrations.path],
            program: "ledger-tables"
        )
        #expect(notMigrations.status == 1, "\(notMigrations)")

        let manifest = try await Self.manifest("")
        let modules = manifest.targets.filter { $0.path == nil && ["regular", "executable"].contains($0.type) }
        #expect(modules.count >= 15, "read only \(modules.map(\.name))")
        let unchecked = modules.filter { $0.name != "TillLedger" && !$0.plugins.contains("LedgerTables") }
        #expect(unchecked.isEmpty, "modules whose build does not run the check: \(unchecked.map(\.name))")
        let ledger = try #require(modules.first { $0.name == "TillLedger" })
        #expect(ledger.plugins.isEmpty)
    }

    /// The scan above finds what it looks for: the ledger's own writer writes every one of the ledger's tables, and
    /// links guests.
    @Test func theLedgerWriteScanFindsTheLedgersOwnWrites() throws {
        let found = Set(
            try Self.ledgerWrites(in: "TillLedger").filter { $0.file == "TillLedger/Store/LedgerStore.swift" }
                .map(\.what)
        )
        let expected = Set(Self.ledgerTables.map { "writes \($0)" }).union(["links a guest to an account"])
        #expect(found == expected)
    }

    /// The tables whose rows are money, credits or access.
    static let ledgerTables: Set<String> = [
        "srv_transactions", "srv_balance_entries", "srv_balances", "srv_finance", "srv_subscription_states",
    ]

    /// Each statement in a target's sources that writes one of the ledger's tables or links a guest to an account:
    /// the file (`<target>/<path>`) and what it does.
    static func ledgerWrites(in target: String) throws -> [(file: String, what: String)] {
        let statement = try Regex(
            #"(?i)\b(INSERT\s+(?:OR\s+\w+\s+)?INTO|REPLACE\s+INTO|UPDATE|DELETE\s+FROM)\s+"?(srv_\w+)"#
        ).wordBoundaryKind(.simple)
        // Simple word boundaries: by Unicode's default rules `db.insert` is one word, and `\binsert` misses it.
        let builder = try Regex(#"\b(insert\(into:|update\(|delete\(from:)\s*"(srv_\w+)""#).wordBoundaryKind(.simple)
        // A table's name handed to a function (`add("srv_transactions", …)`, `into("srv_finance")`) but to read from it.
        let named = try Regex(#"\b(\w+)\(\s*"(srv_\w+)""#).wordBoundaryKind(.simple)
        let aliasUpdate = try Regex(#"(?i)UPDATE\s+srv_customers\s+SET[^"]*\balias_of\s*="#).wordBoundaryKind(.simple)
        var found: [(file: String, what: String)] = []
        for file in try Self.files(of: target).sorted() {
            let text = try String(
                contentsOf: Self.root.appendingPathComponent("Sources/\(target)/\(file)"),
                encoding: .utf8
            )
            let code = text.split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }
                .joined(separator: " ").replacing(try Regex(#"\s+"#), with: " ")
            for match in code.matches(of: statement) + code.matches(of: builder) {
                guard let table = match.output[2].substring.map(String.init), Self.ledgerTables.contains(table) else {
                    continue
                }
                found.append(("\(target)/\(file)", "writes \(table)"))
            }
            for match in code.matches(of: named) {
                guard let function = match.output[1].substring, !["from", "join"].contains(function),
                    let table = match.output[2].substring.map(String.init), Self.ledgerTables.contains(table)
                else { continue }
                found.append(("\(target)/\(file)", "writes \(table)"))
            }
            if code.contains(aliasUpdate) { found.append(("\(target)/\(file)", "links a guest to an account")) }
        }
        return found
    }

    /// The ledger's writer is the TillLedger module's own: code in any other module (the server's rooms, the
    /// benchmarks, the tests) that names `LedgerStore` or `Ledger.writes` does not compile. Checked by compiling
    /// three files against the modules `swift build` made for these tests: one that uses what the module shares with
    /// the package (it must compile, or the check proves nothing), and one for each way in.
    @Test func theLedgersWriterIsInternalToItsModule() async throws {
        let shared = """
            func change(_ database: TillDatabase, _ ledger: Ledger) async throws {
                _ = CustomerStore(database: database)
                try await ledger.rebuildBalances()
            }
            """
        let control = try await Self.typecheck(shared)
        #expect(control.status == 0, "the package's view of TillLedger does not compile: \(control.output)")
        let store = try await Self.typecheck(
            "func write(_ database: TillDatabase) { _ = LedgerStore(database: database) }"
        )
        #expect(store.status != 0 && store.output.contains("cannot find 'LedgerStore' in scope"), "\(store.output)")
        let writes = try await Self.typecheck("func write(_ ledger: Ledger) { _ = ledger.writes }")
        #expect(writes.status != 0 && writes.output.contains("'writes' is inaccessible"), "\(writes.output)")
        // `@testable` would open the module's internals: only the ledger's own folder may say it.
        var testable: [String] = []
        for folder in ["Sources", "Tests"] {
            let base = Self.root.appendingPathComponent(folder)
            for case let file as String in try #require(FileManager.default.enumerator(atPath: base.path))
            where file.hasSuffix(".swift") && !file.hasPrefix("TillLedger/")
                && !file.hasSuffix("LayoutTests.swift") && !file.contains("/.build")
            {
                let text = try String(contentsOf: base.appendingPathComponent(file), encoding: .utf8)
                if text.contains("@testable import TillLedger") { testable.append("\(folder)/\(file)") }
            }
        }
        #expect(testable.isEmpty, "TillLedger's internals opened by: \(testable)")
    }

    /// Claims, leases and attempts are the job queue's own: code outside TillJobs may queue, delete, bring forward and
    /// dead-letter jobs through `JobStore`'s package functions, but not claim one, reschedule it or release claims;
    /// those go through `JobQueue`, which counts the attempts and the outcomes.
    @Test func claimingJobsIsTheJobQueuesOwn() async throws {
        let modules = ["TillJobs", "TillLedger", "TillStorage"]
        let shared = """
            func queue(_ database: TillDatabase, _ jobs: JobQueue, on db: any SQLDatabase) async throws {
                try await jobs.enqueue(.confirmation, key: "s1", trace: nil, on: db)
                try await JobStore(database: database).bringJobsForward(kind: .delivery, group: "e1", at: 0, on: db)
            }
            """
        let control = try await Self.typecheck("import SQLKit\n" + shared, importing: modules)
        #expect(control.status == 0, "the package's view of TillJobs does not compile: \(control.output)")
        let claim = try await Self.typecheck(
            """
            import SQLKit
            func claim(_ database: TillDatabase, on db: any SQLDatabase) async throws {
                _ = try await JobStore(database: database).claimJob(kind: .confirmation, key: "s1", now: 0, until: 1, on: db)
            }
            """,
            importing: modules
        )
        #expect(claim.status != 0 && claim.output.contains("'claimJob' is inaccessible"), "\(claim.output)")
    }

    /// A room that is a module and owns its tables keeps its store internal: the server above it reaches those tables
    /// only through the room's types, which decide what is written.
    struct OwnStore: Sendable, CustomTestStringConvertible {
        var store: String
        var modules: [String]
        /// Code outside the module that uses the room's types as the server does: it must compile.
        var control: String

        var testDescription: String { store }
    }

    static let ownStores = [
        // The webhooks room: endpoints and deliveries through `WebhookEndpoints`, `WebhookDeliveries`,
        // `WebhookDeliveryHistory`.
        OwnStore(
            store: "WebhookStore",
            modules: ["TillWebhooks", "TillStorage"],
            control: """
                func history(_ database: TillDatabase, _ endpoints: WebhookEndpoints) -> String {
                    _ = WebhookDeliveryHistory(database: database, endpoints: endpoints)
                    return WebhookDeliveries.newId(at: 0)
                }
                """
        ),
        // The console: its sessions and actions through `ConsoleSessions` and its `ConsoleAudit`.
        OwnStore(
            store: "ConsoleStore",
            modules: ["TillConsole", "Foundation", "TillLedger", "TillStorage"],
            control: """
                func audit(_ database: TillDatabase) async throws -> Int {
                    let sessions = ConsoleSessions(database: database, clock: ServerClock { Date() }, operatorToken: "t")
                    return try await sessions.audit.actions(before: nil, limit: 1).count
                }
                """
        ),
        // Apple's side: submissions and their attempts through `Intake`, `ConfirmationQueue` (the catalogue's hook
        // brings failed confirmations forward through the queue) and `QueueAdmin`, catch-up runs through `CatchUp`,
        // consumption requests and consent through `ConsumptionAnswers`.
        OwnStore(
            store: "SubmissionStore",
            modules: ["TillAppStore", "TillLedger", "TillStorage"],
            control: """
                func bringForward(_ database: TillDatabase, _ admin: QueueAdmin) async throws -> Int {
                    _ = try await admin.depth()
                    return try await ConfirmationQueue.bringForward(
                        cause: .configuration, bundleId: nil, database: database, at: 0
                    )
                }
                """
        ),
        OwnStore(
            store: "CatchUpStore",
            modules: ["TillAppStore", "TillLedger", "TillStorage"],
            control: """
                func last(_ catchUp: CatchUp) async throws -> CatchUpRun {
                    try await catchUp.lastRun(bundleId: "com.example.till")
                }
                """
        ),
        OwnStore(
            store: "ConsumptionStore",
            modules: ["TillAppStore", "TillLedger", "TillStorage"],
            control: """
                func consent(_ answers: ConsumptionAnswers) async throws -> ConsumptionConsent {
                    try await answers.consent(bundleId: "com.example.till", customerId: "c")
                }
                """
        ),
    ]

    @Test(arguments: ownStores)
    func aRoomsStoreIsItsOwn(_ room: OwnStore) async throws {
        let control = try await Self.typecheck(room.control, importing: room.modules)
        #expect(control.status == 0, "the package's view of \(room.modules[0]) does not compile: \(control.output)")
        let store = try await Self.typecheck(
            """
            func store(_ database: TillDatabase) {
                _ = \(room.store)(database: database)
            }
            """,
            importing: room.modules
        )
        #expect(
            store.status != 0 && store.output.contains("cannot find '\(room.store)' in scope"),
            "\(store.output)"
        )
    }

    /// Type-checks `source`, after importing `modules` (the ledger and storage by default), as a module of this package
    /// (`-package-name`, so that `package` declarations are visible), against the modules of this test run's build.
    static func typecheck(_ source: String, importing modules: [String] = ["TillLedger", "TillStorage"]) async throws
        -> (status: Int32, output: String)
    {
        // This test binary is in the build's products folder, beside `Modules/` and each C target's module map.
        let products = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        let built = products.appendingPathComponent("Modules")
        try #require(
            FileManager.default.fileExists(atPath: built.appendingPathComponent("TillLedger.swiftmodule").path),
            "no TillLedger.swiftmodule beside \(products.path)"
        )
        // C modules the Swift modules import: the build's own, and those the checkouts ship (`include/`).
        let checkouts = products.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
            "checkouts"
        )
        var maps: [String] = []
        for target in try FileManager.default.contentsOfDirectory(atPath: products.path)
        where target.hasSuffix(".build") {
            let map = products.appendingPathComponent(target + "/module.modulemap")
            if FileManager.default.fileExists(atPath: map.path) { maps.append(map.path) }
        }
        for case let file as String in try #require(FileManager.default.enumerator(atPath: checkouts.path))
        where file.hasSuffix("/include/module.modulemap") {
            maps.append(checkouts.appendingPathComponent(file).path)
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "till-ledger-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("Outside.swift")
        try Data((modules.map { "import \($0)\n" }.joined() + "\n" + source + "\n").utf8).write(to: file)
        // The package name SwiftPM compiled this package's modules with (its folder's name, lowercased, with `-` as
        // `_`), read from the build's own manifest, where the command that compiled TillLedger names it.
        let manifest = products.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(products.lastPathComponent + ".yaml")
        let command = try #require(
            try String(contentsOf: manifest, encoding: .utf8).split(separator: "\n")
                .first { $0.contains(#""-module-name","TillLedger""#) },
            "no command compiling TillLedger in \(manifest.path)"
        )
        let packageName = String(
            try #require(command.firstMatch(of: try Regex(#""-package-name","([^"]+)""#))?.output[1].substring)
        )
        let arguments =
            ["swiftc", "-typecheck", file.path, "-package-name", packageName, "-I", built.path]
            + maps.flatMap { ["-Xcc", "-fmodule-map-file=\($0)"] }
        let (status, output) = try await ChildProcess.run("/usr/bin/env", arguments, in: directory)
        return (status, output)
    }

    /// The app SDK imports the contract, the snapshot check and Foundation's networking: not the server's receipt
    /// machinery (TillFormats), and not SwiftNIO or AsyncHTTPClient, which iOS apps do not use.
    @Test func theAppSDKImportsNeitherSwiftNIONorTheReceiptMachinery() throws {
        let forbidden = ["TillFormats", "TillStorage", "TillServer", "NIO", "AsyncHTTPClient", "Hummingbird"]
        var offenders: [String] = []
        for file in try Self.files(of: "TillClient") {
            let text = try String(
                contentsOf: Self.root.appendingPathComponent(Self.folder(of: "TillClient") + "/" + file),
                encoding: .utf8
            )
            for line in text.split(separator: "\n") {
                let words = line.trimmingCharacters(in: .whitespaces).split(separator: " ")
                guard let index = words.firstIndex(of: "import"), index + 1 < words.count else { continue }
                let module = String(words[index + 1])
                if forbidden.contains(where: { module.hasPrefix($0) }) { offenders.append("\(file): \(line)") }
            }
        }
        #expect(offenders.isEmpty, "TillClient imports \(offenders)")
    }

    /// Package.swift and Client/Package.swift declare for each target exactly what its files import: nothing
    /// missing (a module reached only through another target's dependencies), nothing unused. Read from
    /// `swift package dump-package`.
    @Test(arguments: ["", "Client"]) func everyTargetDeclaresExactlyWhatItImports(_ package: String) async throws {
        let manifest = try await Self.manifest(package)
        let names = Set(manifest.targets.map(\.name))
        // Modules of the toolchain and of Apple's SDKs, and C modules a declared product brings with it (not
        // products of their own).
        let implicit: Set<String> = [
            "Foundation", "FoundationNetworking", "FoundationEssentials", "Testing", "Synchronization", "Dispatch",
            "Glibc", "Darwin", "Musl", "VaporCSQLite", "Observation", "StoreKit", "SwiftUI", "Combine", "Network",
            "PackagePlugin",
        ]
        // A product whose module has another name.
        let moduleOfProduct = ["_NIOFileSystem": "NIOFileSystem"]
        var problems: [String] = []
        for target in manifest.targets {
            // A plugin's dependencies are the tools it runs, not modules it imports.
            let declared =
                target.type == "plugin" ? [] : Set(target.dependencies.map { moduleOfProduct[$0] ?? $0 })
            let folder =
                (package.isEmpty ? "" : package + "/")
                + (target.path
                    ?? ((target.type == "test" ? "Tests/" : target.type == "plugin" ? "Plugins/" : "Sources/")
                        + target.name))
            var imported: Set<String> = []
            let enumerator = FileManager.default.enumerator(atPath: Self.root.appendingPathComponent(folder).path)
            for case let file as String in try #require(enumerator)
            where file.hasSuffix(".swift") {
                let source = try String(
                    contentsOf: Self.root.appendingPathComponent(folder + "/" + file),
                    encoding: .utf8
                )
                for line in source.split(separator: "\n") {
                    let words = line.split(separator: " ").filter { !$0.hasPrefix("@") && $0 != "public" }
                    guard words.first == "import", words.count >= 2 else { continue }
                    imported.insert(String(words[words.count == 3 ? 2 : 1].split(separator: ".")[0]))
                }
            }
            imported.subtract(implicit)
            imported.remove(target.name)
            let missing = imported.subtracting(declared).sorted()
            let unused = declared.subtracting(imported).sorted()
            if !missing.isEmpty { problems.append("\(target.name) imports undeclared \(missing)") }
            if !unused.isEmpty { problems.append("\(target.name) declares unused \(unused)") }
        }
        #expect(names.count >= (package.isEmpty ? 15 : Self.clientTargets.count), "read only \(names.sorted())")
        #expect(problems.isEmpty, "\(problems)")
    }

    /// `swift package dump-package` of the root package (`""`) or of `Client`.
    fileprivate static func manifest(_ package: String) async throws -> Manifest {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("till-dump-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let directory = package.isEmpty ? Self.root : Self.root.appendingPathComponent(package)
        let (status, text) = try await ChildProcess.run(
            "/usr/bin/env",
            ["swift", "package", "--scratch-path", scratch.path, "dump-package"],
            in: directory
        )
        try #require(status == 0, "swift package dump-package: \(text)")
        let start = try #require(text.firstIndex(of: "{"))
        return try JSONDecoder().decode(Manifest.self, from: Data(text[start...].utf8))
    }

    /// docs/architecture.md's table of what each target may import (of the project's own modules) is the graph
    /// Package.swift and Client/Package.swift declare: every target that is not a test, each edge, nothing more.
    /// With `everyTargetDeclaresExactlyWhatItImports`, an import the table does not allow does not pass.
    @Test func theArchitectureDrawsTheGraphPackageSwiftDeclares() async throws {
        let manifests = [try await Self.manifest(""), try await Self.manifest("Client")]
        let targets = manifests.flatMap(\.targets)
        let ours = Set(targets.map(\.name))
        var declared: [String: Set<String>] = [:]
        for target in targets where target.type != "test" {
            declared[target.name] = Set(target.dependencies.filter(ours.contains))
        }
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let block = try #require(
            text.components(separatedBy: "<!-- imports:").dropFirst().first?.components(
                separatedBy: "<!-- /imports -->"
            )
            .first,
            "docs/architecture.md has no <!-- imports: --> table"
        )
        var drawn: [String: Set<String>] = [:]
        for line in block.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            let name = cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            let allowed = cells[2].split(separator: ",").map {
                $0.trimmingCharacters(in: CharacterSet(charactersIn: "` "))
            }
            drawn[name] = Set(allowed.filter { $0 != "nothing" })
        }
        #expect(declared.count >= 15, "read only \(declared.keys.sorted())")
        var problems: [String] = []
        for name in Set(declared.keys).union(drawn.keys).sorted() {
            guard let shown = drawn[name] else {
                problems.append("\(name) is not in the table")
                continue
            }
            guard let real = declared[name] else {
                problems.append("\(name) is in the table but not a target")
                continue
            }
            if !real.subtracting(shown).isEmpty {
                problems.append("\(name) imports \(real.subtracting(shown).sorted()), which the table does not show")
            }
            if !shown.subtracting(real).isEmpty {
                problems.append("\(name) is shown importing \(shown.subtracting(real).sorted()), which it does not")
            }
        }
        #expect(problems.isEmpty, "docs/architecture.md against Package.swift: \(problems)")
    }

    /// docs/architecture.md's first table names, for each target, the packages Package.swift gives it, exactly: the
    /// column once named our own modules too, and drifted from the manifests (a review found three targets wrong).
    @Test func theArchitectureNamesThePackagesEachTargetDependsOn() async throws {
        let targets = [try await Self.manifest(""), try await Self.manifest("Client")].flatMap(\.targets)
        var declared: [String: Set<String>] = [:]
        for target in targets where target.type != "test" { declared[target.name] = target.packages }
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let rows = text.split(separator: "\n").drop { !$0.hasPrefix("| target | holds | packages it depends on") }
            .dropFirst(2).prefix { $0.hasPrefix("| `") }
        var problems: [String] = []
        var checked = 0
        for row in rows {
            let cells = row.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            let name = String(cells[1].split(separator: " ")[0]).trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            // `till-fuzz` is declared only when TILL_FUZZ is set, so the manifest read here does not have it.
            guard let real = declared[name] else { continue }
            let listed = cells[cells.count - 2].split(separator: ";")[0].split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            let shown = Set(listed.filter { $0 != "nothing" })
            if shown != real {
                problems.append(
                    "\(name): Package.swift has \(real.subtracting(shown).sorted()) that the table lacks, "
                        + "the table has \(shown.subtracting(real).sorted()) that Package.swift lacks"
                )
            }
            checked += 1
        }
        #expect(checked >= 20, "read only \(checked) rows")
        #expect(problems.isEmpty, "docs/architecture.md's packages against Package.swift: \(problems)")
    }

    /// Every file or folder of the repository that README.md and docs/ name exists: a review found three docs
    /// pointing at files that had moved. docs/benchmarks.md is left out (a history names what was there then), and so
    /// are placeholders: a path with a component in capitals (`VERSION`, `TARGET`) or a release number (`0.4.1`).
    @Test func everyPathTheDocsNameExists() throws {
        let folder = Self.root.appendingPathComponent("docs").path
        let names = try FileManager.default.contentsOfDirectory(atPath: folder)
        let docs = names.filter { $0.hasSuffix(".md") && $0 != "benchmarks.md" }.map { "docs/" + $0 } + ["README.md"]
        // A path starts the line or follows what cannot be in one (`.build-deploy/…` is not `deploy/…`).
        let path = try Regex(
            #"(?:^|[^\w/.\-])((?:Client/)?(?:Sources|Tests|Tools|deploy|\.ci)/[A-Za-z0-9_./+\-]*[A-Za-z0-9_+\-])"#,
            as: (Substring, Substring).self
        )
        let placeholder = try Regex(#"^([A-Z]+|[0-9]+\.[0-9]+\.[0-9]+)$"#)
        var missing: [String] = []
        for doc in docs {
            let text = try String(contentsOf: Self.root.appendingPathComponent(doc), encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                for match in line.matches(of: path) {
                    let named = String(match.output.1)
                    let parts = named.split(separator: "/")
                    if parts.contains(where: { $0.wholeMatch(of: placeholder) != nil }) { continue }
                    if !FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(named).path) {
                        missing.append("\(doc):\(number + 1) \(named)")
                    }
                }
            }
        }
        #expect(docs.count >= 15, "read only \(docs)")
        #expect(missing.isEmpty, "paths the docs name that are not in the repository: \(missing)")
    }

    /// The benchmarks and the load generator are not in the libraries that ship: only in TillBench.
    @Test func benchmarksLiveOnlyInTillBench() throws {
        var offenders: [String] = []
        for target in ["TillCore", "TillFormats", "TillStorage", "TillServer", "TillSimulator", "TillClient"] {
            for file in try Self.files(of: target) {
                let text = try String(
                    contentsOf: Self.root.appendingPathComponent(Self.folder(of: target) + "/" + file),
                    encoding: .utf8
                )
                if text.contains("enum VerificationBenchmark") || text.contains("enum ServerBenchmark")
                    || text.contains("LoadGenerator")
                {
                    offenders.append("\(target)/\(file)")
                }
            }
        }
        #expect(offenders.isEmpty, "benchmark code in a product library: \(offenders)")
        #expect(try Self.files(of: "TillBench").contains("VerificationBenchmark.swift"))
    }
}

/// What `swift package dump-package` says of the targets: each one's name, kind, folder and dependencies.
private struct Manifest: Decodable {
    struct Target: Decodable {
        var name: String
        var type: String
        var path: String?
        var dependencies: [String]
        /// The packages of its products (`.product(name:package:)`), as Package.swift names them; the app's package
        /// (`Client`) is our own modules, so it is left out.
        var packages: Set<String>
        /// The build-tool plugins it uses (`plugins:`).
        var plugins: [String]

        enum CodingKeys: String, CodingKey { case name, type, path, dependencies, pluginUsages }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            type = try container.decode(String.self, forKey: .type)
            path = try container.decodeIfPresent(String.self, forKey: .path)
            // Each dependency is {"byName"|"target"|"product": [name, …]}; the name comes first.
            let all = try container.decode([[String: [Dependency]]].self, forKey: .dependencies)
            dependencies = all.compactMap { $0.values.first?.first?.text }
            // A product's array is [name, package, module aliases, condition].
            packages = Set(all.compactMap { $0["product"].flatMap { $0.count > 1 ? $0[1].text : nil } })
                .subtracting(["Client"])
            // Each usage is {"plugin": [name, package]}.
            plugins = (try container.decodeIfPresent([[String: [Dependency]]].self, forKey: .pluginUsages) ?? [])
                .compactMap { $0.values.first?.first?.text }
        }
    }

    /// One element of a dependency's array: a name, a package, a condition (null) or settings.
    struct Dependency: Decodable {
        var text: String?
        init(from decoder: any Decoder) throws {
            text = try? decoder.singleValueContainer().decode(String.self)
        }
    }

    var targets: [Target]
}
