import Foundation
import Hummingbird
import HummingbirdTesting
import SQLKit
import Testing
import TillCatalogue
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillServer

/// Every release's database opens in today's build: `Tools/upgrade-fixture` made each folder of
/// Tests/Fixtures/Upgrade with that release's own binary (a database and what the release answered about it), and
/// this build must migrate it and answer at least the same: every customer, every event, the revenue report and the
/// console's figures. A field added since is allowed; one changed or lost is not.
@Suite(.sharingTheMachine)
struct UpgradeTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/Upgrade")
    static let changelog = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("CHANGELOG.md")

    static var releases: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: fixtures.path)) ?? []).sorted()
    }

    /// (release, engine) for each engine the release's folder has and this run can open: SQLite always,
    /// PostgreSQL when a test server is configured (and always under CI, where a missing one fails).
    static var databases: [(String, TestDatabase)] {
        releases.flatMap { release in
            TestDatabase.all.filter {
                FileManager.default.fileExists(
                    atPath: fixtures.appendingPathComponent("\(release)/\($0.rawValue)").path
                )
            }.map { (release, $0) }
        }
    }

    /// Each release of CHANGELOG.md from 0.4.0 on has its fixture (docs/releasing.md: the release makes it).
    @Test func everyReleaseHasItsDatabase() throws {
        let text = try String(contentsOf: Self.changelog, encoding: .utf8)
        let versions = text.split(separator: "\n").filter { $0.hasPrefix("## ") }.compactMap {
            $0.dropFirst(3).split(separator: " ").first.map(String.init)
        }
        #expect(versions.contains("0.4.0"))
        for version in versions {
            let parts = version.split(separator: ".").compactMap { Int($0) }
            guard parts.count == 3, (parts[0], parts[1]) >= (0, 4) else { continue }
            for engine in ["sqlite", "postgres"] {
                #expect(
                    FileManager.default.fileExists(
                        atPath: Self.fixtures.appendingPathComponent("\(version)/\(engine)").path
                    ),
                    "no Tests/Fixtures/Upgrade/\(version)/\(engine): run Tools/upgrade-fixture (docs/releasing.md)"
                )
            }
        }
    }

    /// `expected` is in `actual`: the same scalars, every key of an object (more keys allowed), arrays of the same
    /// length element by element.
    static func differences(_ expected: Any, _ actual: Any, at path: String = "") -> [String] {
        switch (expected, actual) {
        case (let expected as [String: Any], let actual as [String: Any]):
            return expected.keys.sorted().flatMap { key in
                guard let value = actual[key] else { return ["\(path).\(key) is gone"] }
                return differences(expected[key]!, value, at: "\(path).\(key)")
            }
        case (let expected as [Any], let actual as [Any]):
            guard expected.count == actual.count else {
                return ["\(path) has \(actual.count) items, not \(expected.count)"]
            }
            return zip(expected, actual).enumerated().flatMap { differences($1.0, $1.1, at: "\(path)[\($0)]") }
        default:
            let same = (expected as? NSObject)?.isEqual(actual) ?? false
            return same ? [] : ["\(path) is \(actual), not \(expected)"]
        }
    }

    static func json(_ text: some StringProtocol) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
    }

    /// A copy of the release's database to open: the SQLite file copied, or the PostgreSQL dump restored by psql
    /// into a new database of the test server. The second value drops that database.
    static func restore(_ folder: URL, _ engine: TestDatabase, into directory: URL) async throws
        -> (DatabaseConfiguration, @Sendable () async -> Void)
    {
        switch engine {
        case .sqlite:
            let path = directory.appendingPathComponent("till.sqlite").path
            try FileManager.default.copyItem(atPath: folder.appendingPathComponent("till.sqlite").path, toPath: path)
            return (.sqlite(path: path), {})
        case .postgres:
            try Prerequisite.postgres.require()
            let serverURL = try #require(TestDatabase.postgresURL)
            let name = "till_upgrade_\(UUID().uuidString.prefix(8).lowercased())"
            let admin = try await TillDatabase.open(.postgres(url: serverURL))
            try await admin.sql.raw("CREATE DATABASE \(unsafeRaw: name)").run()
            let url = serverURL.replacingOccurrences(
                of: "/\(URL(string: serverURL)!.lastPathComponent)",
                with: "/\(name)"
            )
            let plain = String(url.split(separator: "?")[0])
            let (status, output) = try await ChildProcess.run(
                "/usr/bin/env",
                [
                    "psql", "--quiet", "--set", "ON_ERROR_STOP=1", "--dbname", plain, "--file",
                    folder.appendingPathComponent("till.sql").path,
                ]
            )
            try #require(status == 0, "psql: \(output)")
            return (
                .postgres(url: url),
                {
                    try? await admin.sql.raw("DROP DATABASE IF EXISTS \(unsafeRaw: name) WITH (FORCE)").run()
                    try? await admin.shutdown()
                }
            )
        }
    }

    @Test(arguments: databases) func aReleasesDatabaseOpensAndReadsAsItDid(_ release: String, _ engine: TestDatabase)
        async throws
    {
        let folder = Self.fixtures.appendingPathComponent("\(release)/\(engine.rawValue)")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "till-upgrade-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (database, drop) = try await Self.restore(folder, engine, into: directory)
        let server = try await PurchaseServer.open(ServerConfiguration(database: database, operatorToken: "operator"))
        do {
            // Migrated to this build's schema.
            let applied = try await server.database.sql.raw(
                "SELECT id FROM till_schema_migrations WHERE schema = 'server'"
            ).all().map { try $0.decode(column: "id", as: String.self) }
            #expect(Set(applied) == Set(ServerSchema.migrations.map(\.id)))
            let app = try #require(try await server.catalogue.app(bundleId: "com.example.till"))
            try await Application(router: buildServerRouter(server)).test(.router) { client in
                func compare(_ name: String, _ expected: Any, _ reply: HTTPReply) {
                    #expect(reply.status == 200, "\(name): \(reply.status)")
                    let actual = (try? Self.json(String(decoding: reply.body, as: UTF8.self))) ?? NSNull()
                    let found = Self.differences(expected, actual)
                    #expect(found.isEmpty, "\(release) \(name): \(found.prefix(5))")
                }
                let customers = try String(
                    contentsOf: folder.appendingPathComponent("customers.jsonl"),
                    encoding: .utf8
                )
                var count = 0
                for line in customers.split(separator: "\n") where line.hasPrefix("{") {
                    let expected = try Self.json(line)
                    let id = try #require((expected as? [String: Any])?["customerId"] as? String)
                    compare(
                        "customer \(id)",
                        expected,
                        try await client.call(.get, "/v1/customers/\(id)", token: app.appKey)
                    )
                    count += 1
                }
                #expect(count >= 3)
                let events = try Self.json(
                    try String(contentsOf: folder.appendingPathComponent("events.json"), encoding: .utf8)
                )
                #expect(((events as? [String: Any])?["items"] as? [Any])?.count ?? 0 >= 8)
                compare(
                    "events",
                    events,
                    try await client.call(
                        .get,
                        "/admin/v1/events?bundleId=com.example.till&limit=1000",
                        token: "operator"
                    )
                )
                compare(
                    "revenue",
                    try Self.json(
                        try String(contentsOf: folder.appendingPathComponent("revenue.json"), encoding: .utf8)
                    ),
                    try await client.call(
                        .get,
                        "/admin/v1/reports/revenue?from=2020-01-01&to=2040-01-01&groupBy=product",
                        token: "operator"
                    )
                )
                // The console's figures of the fixture's day: every line the release wrote, the same.
                let day = try String(contentsOf: folder.appendingPathComponent("figures-day"), encoding: .utf8)
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                let expected = try String(contentsOf: folder.appendingPathComponent("figures.csv"), encoding: .utf8)
                let console = ConsoleClient(client)
                try await console.signIn("operator")
                let csv = try await console.get(
                    "/console/overview.csv?app=com.example.till&from=\(day)&to=\(day)&bucket=day&environment=Sandbox"
                )
                #expect(csv.status == 200)
                let lines = Set(csv.body.split(separator: "\n"))
                for line in expected.split(separator: "\n") {
                    #expect(lines.contains(line), "\(release) figures: \(line) is gone; now \(csv.body)")
                }
            }
        } catch {
            try? await server.shutdown()
            await drop()
            throw error
        }
        try await server.shutdown()
        await drop()
    }
}
