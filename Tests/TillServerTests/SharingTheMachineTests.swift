import Foundation
import Testing
import TillTestSupport

/// The package's tests pass at any width Swift Testing runs them at because every test that starts live services
/// holds a share of the machine (`MachineShare`). These keep it so: a new suite that starts services without
/// `.sharingTheMachine` fails here, not on a loaded machine some day.
struct SharingTheMachineTests {
    static let tests = LayoutTests.root.appendingPathComponent("Tests")

    /// What starts something that holds descriptors, connections, threads or processes while a test runs: the
    /// test support's entry points and the services themselves (a Hummingbird `Application` tested in `.router`
    /// mode holds nothing; a live one runs through `withServices`). The fixtures, judges and worlds declared beside
    /// them join the list, so a suite using a fixture is held to the rule too.
    static let resourceHolders = [
        "withServices", "TestDatabase", "TillExecutable", "TillProcess", "SeparateDeployment", "ChildProcess",
        "Simulator.open", "PurchaseServer.open", "TillDatabase.open", "HTTPClient",
    ]
    static let fixtureSuffixes = ["Fixture", "Judge", "World", "Server"]

    struct TestFile {
        var path: String
        var text: String
        /// Top-level types it declares (`struct X`, `final class X`, `enum X`, `actor X`).
        var declared: [String]
        /// Types it extends at top level.
        var extended: [String]
    }

    static func testFiles() throws -> [TestFile] {
        let enumerator = try #require(FileManager.default.enumerator(atPath: tests.path))
        return try enumerator.compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") && !$0.hasPrefix("TillTestSupport/") }
            .map { path in
                let text = try String(contentsOf: tests.appendingPathComponent(path), encoding: .utf8)
                var declared: [String] = []
                var extended: [String] = []
                for line in text.split(separator: "\n") {
                    let words = line.split(separator: " ").map(String.init)
                    guard let first = words.first else { continue }
                    let keywords = ["struct", "final", "enum", "actor", "class", "public", "private", "fileprivate"]
                    if keywords.contains(first), let index = words.firstIndex(where: {
                        ["struct", "enum", "actor", "class"].contains($0)
                    }), index + 1 < words.count {
                        declared.append(Self.name(words[index + 1]))
                    } else if first == "extension", words.count > 1 {
                        extended.append(Self.name(words[1]))
                    }
                }
                return TestFile(path: path, text: text, declared: declared, extended: extended)
            }
    }

    static func name(_ word: String) -> String {
        String(word.prefix { $0.isLetter || $0.isNumber || $0 == "_" })
    }

    /// The files that hold resources, directly or through a type declared in another such file.
    static func resourceHoldingFiles(_ files: [TestFile]) -> [TestFile] {
        var markers = resourceHolders
        var holding: Set<String> = []
        while true {
            let found = files.filter { file in
                !holding.contains(file.path) && markers.contains { file.text.contains($0) }
            }
            if found.isEmpty { break }
            for file in found {
                holding.insert(file.path)
                // The fixtures it declares hold resources too.
                markers += file.declared.filter { name in fixtureSuffixes.contains { name.hasSuffix($0) } }
            }
        }
        return files.filter { holding.contains($0.path) }
    }

    @Test func everySuiteThatStartsServicesTakesAShareOfTheMachine() throws {
        let files = try Self.testFiles()
        #expect(files.count > 50, "found only \(files.count) test files under \(Self.tests.path)")
        let holding = Self.resourceHoldingFiles(files)
        #expect(holding.contains { $0.path.hasSuffix("ServerHTTPTests.swift") })
        #expect(holding.contains { $0.path.hasSuffix("RetentionMessagingTests.swift") })  // through SimulatorFixture
        #expect(!holding.contains { $0.path.hasSuffix("ProductTypeTests.swift") })
        let suites = Set(holding.flatMap { $0.declared + $0.extended }.filter { $0.hasSuffix("Tests") })
        var missing: [String] = []
        for suite in suites.sorted() where suite != "SharingTheMachineTests" {
            guard let file = files.first(where: { $0.declared.contains(suite) }) else { continue }
            // The attribute before the suite's declaration names the trait.
            guard let declaration = file.text.range(of: "struct \(suite)") else { continue }
            let before = file.text[..<declaration.lowerBound]
            let attribute = before.range(of: "@Suite", options: .backwards).map { before[$0.lowerBound...] } ?? ""
            let attached = !attribute.isEmpty && !attribute.contains("\n}") && !attribute.contains("struct ")
            if !(attached && attribute.contains(".sharingTheMachine")) { missing.append("\(suite) (\(file.path))") }
        }
        #expect(missing.isEmpty, "suites that start services without @Suite(.sharingTheMachine): \(missing)")
    }

    /// No more tests than the limit hold a share at once, whatever the width: many waiting tasks, each counting
    /// how many run together.
    @Test func sharesAreBoundedAndPassedOn() async throws {
        let share = MachineShare(limit: 3)
        let running = Counter()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<30 {
                group.addTask {
                    try await share.run {
                        await running.enter()
                        try await Task.sleep(for: .milliseconds(5))
                        // Nested work of the same test runs under the same share, without waiting for another.
                        try await share.run { try await Task.sleep(for: .milliseconds(1)) }
                        await running.leave()
                        await running.finish()
                    }
                }
            }
            try await group.waitForAll()
        }
        let most = await running.most
        let finished = await running.finished
        #expect(most <= 3 && finished == 30)
        #expect(await share.taken == 0)
    }

    actor Counter {
        var now = 0
        var most = 0
        func enter() {
            now += 1
            most = max(most, now)
        }
        var finished = 0
        func leave() { now -= 1 }
        func finish() { finished += 1 }
    }
}
