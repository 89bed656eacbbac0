import Foundation
import Testing
import TillStorage
import TillTestSupport

@testable import TillServer

/// The files docs/deploy.md installs (deploy/): the systemd unit, judged by `systemd-analyze verify`; the settings
/// file, read as `till serve` reads it; the Containerfile, by its structure (no Dockerfile linter is packaged for
/// Debian, and no container engine runs here).
@Suite struct DeploymentFilesTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The deployable binary's build, as docs/deploy.md and the Containerfile give it.
    static let buildCommand = "swift build -c release --static-swift-stdlib --disable-default-traits --product till"

    static func text(_ path: String) throws -> String {
        try String(contentsOf: repository.appendingPathComponent(path), encoding: .utf8)
    }

    /// The subcommands `till --help` lists (`  serve   Run the …`), in order.
    static func subcommands(ofHelp help: String) -> [String] {
        help.split(separator: "\n").drop { $0 != "SUBCOMMANDS:" }.compactMap { line -> String? in
            guard line.hasPrefix("  "), !line.hasPrefix("   "), let word = line.split(separator: " ").first,
                word.allSatisfy({ $0.isLowercase || $0 == "-" })
            else { return nil }
            return String(word)
        }
    }

    /// The commands docs/deploy.md says the server's binary has: the backticked words of its sentence.
    static func deployedCommands() throws -> [String] {
        let guide = try text("docs/deploy.md")
        let start = try #require(guide.range(of: "The server's binary has every other command ("))
        let end = try #require(guide[start.upperBound...].firstIndex(of: ")"))
        return guide[start.upperBound..<end].split(separator: "`", omittingEmptySubsequences: false).enumerated()
            .filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    /// docs/deploy.md names every command of the server's binary: those of this build but the `Demo` trait's two
    /// (the deployable binary's own list is checked in `theDeployableBinaryLinksOnlyWhatDeployMdLists`).
    @Test(
        .enabled(if: Prerequisite.tillExecutable.shouldRun, Comment(rawValue: Prerequisite.tillExecutable.skipMessage))
    )
    func deployMdNamesEveryCommandOfTheServersBinary() async throws {
        let help = try await ChildProcess.run(try TillExecutable.require().path, ["--help"])
        try #require(help.status == 0, "\(help.output)")
        let built = Self.subcommands(ofHelp: help.output)
        #expect(built.contains("serve") && built.contains("demo"), "\(help.output)")
        let listed = try Self.deployedCommands()
        #expect(
            Set(built).subtracting(["demo", "shop"]) == Set(listed),
            "till --help: \(built); docs/deploy.md: \(listed)"
        )
    }

    /// `[Section] key=value` lines of a unit file, in order.
    static func unitEntries(_ unit: String) -> [(section: String, key: String, value: String)] {
        var section = ""
        var entries: [(String, String, String)] = []
        for line in unit.split(separator: "\n").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("[") {
                section = String(line.dropFirst().dropLast())
                continue
            }
            guard let equals = line.firstIndex(of: "=") else { continue }
            entries.append((section, String(line[..<equals]), String(line[line.index(after: equals)...])))
        }
        return entries
    }

    /// systemd accepts the unit as written, with the binary where the test build has it: nothing to warn about.
    /// A unit it only warns about (an unknown value is "ignored") is refused here too.
    @Test(
        .enabled(if: Prerequisite.systemdAnalyze.shouldRun, Comment(rawValue: Prerequisite.systemdAnalyze.skipMessage)),
        .enabled(if: Prerequisite.tillExecutable.shouldRun, Comment(rawValue: Prerequisite.tillExecutable.skipMessage))
    )
    func theServiceUnitVerifies() async throws {
        try Prerequisite.systemdAnalyze.require()
        let unit = try Self.text("deploy/till.service")
        let till = try TillExecutable.require().path
        #expect(unit.contains("ExecStart=/usr/local/bin/till serve --config /etc/till/till.json"))
        func verify(_ text: String) async throws -> (Int32, String) {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("till-unit-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let file = directory.appendingPathComponent("till.service")
            try text.replacingOccurrences(of: "/usr/local/bin/till", with: till).write(
                to: file,
                atomically: true,
                encoding: .utf8
            )
            return try await ChildProcess.run("/usr/bin/systemd-analyze", ["verify", file.path])
        }
        let (status, output) = try await verify(unit)
        #expect(status == 0 && output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(status): \(output)")
        // The judge can fail: a value systemd does not know is reported, though it exits 0.
        let planted = try await verify(unit.replacingOccurrences(of: "Type=exec", with: "Type=execute"))
        #expect(!planted.1.isEmpty, "systemd-analyze said nothing of Type=execute")
    }

    /// What the unit promises beside systemd's grammar: a user of its own, graceful stop that systemd never cuts
    /// short, the data directory the only one written.
    @Test func theServiceUnitStopsGracefullyAsItsOwnUser() async throws {
        let entries = Self.unitEntries(try Self.text("deploy/till.service"))
        func value(_ key: String) -> String? { entries.last { $0.section == "Service" && $0.key == key }?.value }
        #expect(value("User") == "till" && value("Group") == "till")
        #expect(value("KillSignal") == "SIGTERM")
        #expect(value("ProtectSystem") == "strict" && value("ReadWritePaths") == "/var/lib/till")
        #expect(value("WorkingDirectory") == "/var/lib/till" && value("StateDirectory") == "till")
        // Till exits at most 10 s past its grace (ShutdownWatchdog); systemd's limit must be above that.
        let settings = try await ServerSettings.load(
            flags: [:],
            environment: ["TILL_OPERATOR_TOKEN": "op-deploy-test-0123456789"],
            file: Self.repository.appendingPathComponent("deploy/till.json").path
        )
        let stopLimit = try #require(value("TimeoutStopSec").flatMap(Int.init))
        #expect(Duration.seconds(stopLimit) > settings.shutdownGrace + .seconds(10))
        #expect(settings.shutdownDrain < settings.shutdownGrace)
    }

    /// deploy/till.json is what `till serve --config` reads: production, every interface, data under /var/lib/till.
    @Test func theSettingsFileIsAProductionServer() async throws {
        let settings = try await ServerSettings.load(
            flags: [:],
            environment: ["TILL_OPERATOR_TOKEN": "op-deploy-test-0123456789"],
            file: Self.repository.appendingPathComponent("deploy/till.json").path
        )
        #expect(!settings.development)
        #expect(settings.host == "0.0.0.0" && settings.port == 8080)
        #expect(settings.database == .sqlite(path: "/var/lib/till/till.sqlite"))
        #expect(settings.contentDirectory.hasPrefix("/var/lib/till/"))
        #expect(settings.shutdownDrain == .seconds(10))
    }

    /// One instruction of a Containerfile, its continuation lines joined.
    struct Instruction {
        var keyword: String
        var arguments: String
    }

    static func instructions(_ text: String) -> [Instruction] {
        var logical: [String] = []
        var pending = ""
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if pending.isEmpty && (line.isEmpty || line.hasPrefix("#")) { continue }
            if line.hasSuffix("\\") {
                pending += line.dropLast() + " "
            } else {
                logical.append(pending + line)
                pending = ""
            }
        }
        return logical.map { line in
            let parts = line.split(separator: " ", maxSplits: 1)
            return Instruction(keyword: String(parts[0]), arguments: parts.count > 1 ? String(parts[1]) : "")
        }
    }

    /// The rules a Dockerfile linter would hold this file to, and what docs/deploy.md promises of the image:
    /// multi-stage, the runtime stage non-root with only the data directory to write, a health check with the
    /// binary itself, exec-form entry point, the port and the settings agreeing.
    @Test func theContainerfileIsMultiStageNonRootAndChecksItsHealth() throws {
        let all = Self.instructions(try Self.text("deploy/Containerfile"))
        let known: Set = [
            "ARG", "FROM", "WORKDIR", "COPY", "RUN", "USER", "ENV", "VOLUME", "EXPOSE", "STOPSIGNAL", "HEALTHCHECK",
            "ENTRYPOINT", "CMD", "LABEL",
        ]
        for instruction in all {
            #expect(known.contains(instruction.keyword), "unknown or lower-case instruction \(instruction.keyword)")
        }
        let stages = all.indices.filter { all[$0].keyword == "FROM" }
        #expect(stages.count == 2, "two stages: the build and the runtime")
        #expect(all[stages[0]].arguments.hasSuffix(" AS build"))
        // Every image named by a variable with a default (ARG before the first FROM), each pinned to a tag.
        for stage in stages {
            let image = String(all[stage].arguments.split(separator: " ")[0])
            #expect(image.hasPrefix("${") && image.hasSuffix("}"), "\(image)")
            let name = image.dropFirst(2).dropLast()
            let argument = try #require(all.first { $0.keyword == "ARG" && $0.arguments.hasPrefix(name + "=") })
            #expect(argument.arguments.contains(":") && !argument.arguments.hasSuffix(":latest"))
        }
        let build = all[stages[0]..<stages[1]]
        let buildCommand = try #require(build.first { $0.keyword == "RUN" }).arguments
        #expect(buildCommand.contains(DeploymentFilesTests.buildCommand))

        let runtime = Array(all[stages[1]...])
        func one(_ keyword: String) throws -> String {
            let found = runtime.filter { $0.keyword == keyword }
            try #require(found.count == 1, "the runtime stage has one \(keyword), not \(found.count)")
            return found[0].arguments
        }
        #expect(try one("COPY") == "--from=build /out/till /usr/local/bin/till")
        let user = try one("USER")
        let uid = try #require(Int(user.split(separator: ":")[0]), "USER is numeric (\(user))")
        #expect(uid != 0)
        #expect(try one("STOPSIGNAL") == "SIGTERM")
        #expect(try one("VOLUME") == #"["/var/lib/till"]"#)
        #expect(try one("WORKDIR") == "/var/lib/till")
        // Exec form: SIGTERM reaches till itself, not a shell.
        for keyword in ["ENTRYPOINT", "CMD"] {
            let form = try one(keyword)
            #expect((try? JSONSerialization.jsonObject(with: Data(form.utf8))) is [String], "\(keyword) \(form)")
        }
        let health = try one("HEALTHCHECK")
        let command = try #require(health.range(of: "CMD ")).upperBound
        let probe = try #require(try JSONSerialization.jsonObject(with: Data(health[command...].utf8)) as? [String])
        #expect(Array(probe.prefix(2)) == ["/usr/local/bin/till", "probe"])
        // The settings: production, every interface, everything written under the volume, a grace that fits the
        // stop timeout docs/deploy.md gives docker (--stop-timeout 40; Till exits 10 s past its grace at most).
        let environment = try one("ENV")
        var settings: [String: String] = [:]
        for pair in environment.split(separator: " ") where pair.contains("=") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            settings[String(parts[0])] = String(parts[1])
        }
        #expect(settings["TILL_MODE"] == "production" && settings["TILL_HTTP_HOST"] == "0.0.0.0")
        #expect(try one("EXPOSE") == settings["TILL_HTTP_PORT"])
        #expect(settings["TILL_DATABASE_URL"]?.hasPrefix("/var/lib/till/") == true)
        #expect(settings["TILL_CONTENT_DIRECTORY"]?.hasPrefix("/var/lib/till/") == true)
        let grace = try #require(settings["TILL_SHUTDOWN_GRACE_SECONDS"].flatMap(Int.init))
        let guide = try Self.text("docs/deploy.md")
        #expect(guide.contains("--stop-timeout 40") && grace + 10 < 40)
        #expect(guide.contains("docker build -f deploy/Containerfile -t till ."))
        // Secrets are not baked in.
        #expect(settings["TILL_OPERATOR_TOKEN"] == nil && settings["TILL_SERVER_SECRET"] == nil)
    }

    /// The deployable binary Tools/deployable-binary builds, named by `TILL_DEPLOYABLE_BINARY`: a release's check
    /// (docs/releasing.md). CI does not build it: its build compiles Till's modules again (its traits differ), 172 to
    /// 197 s of a run that has 30 minutes.
    /// Set but empty, as `$(Tools/deployable-binary)` leaves it when the build fails, the test runs and fails.
    static let deployableBinary = ProcessInfo.processInfo.environment["TILL_DEPLOYABLE_BINARY"]

    /// The deployable binary (the `till` of docs/deploy.md: the Swift runtime linked in, no `Demo` trait) needs
    /// exactly the libraries docs/deploy.md lists, each in Debian's base, and has no `demo` or `shop`. It is built in
    /// debug: the libraries a binary links do not depend on the optimisation.
    @Test(
        .enabled(
            if: deployableBinary != nil,
            "a release's check: TILL_DEPLOYABLE_BINARY=$(Tools/deployable-binary) (docs/releasing.md)"
        )
    )
    func theDeployableBinaryLinksOnlyWhatDeployMdLists() async throws {
        let binary = try #require(Self.deployableBinary)
        try #require(
            FileManager.default.isExecutableFile(atPath: binary),
            "TILL_DEPLOYABLE_BINARY names \(binary), which is not an executable file"
        )
        let (status, output) = try await ChildProcess.run("/usr/bin/ldd", [binary])
        try #require(status == 0, "ldd: \(output)")
        // `libc.so.6 => /lib/… (0x…)`, `linux-vdso.so.1 (0x…)`, `/lib64/ld-linux-x86-64.so.2 (0x…)`: the first word.
        let linked = Set(
            output.split(separator: "\n").compactMap { $0.split(whereSeparator: \.isWhitespace).first.map(String.init) }
        )
        let guide = try Self.text("docs/deploy.md")
        let start = try #require(guide.range(of: "<!-- ldd:"))
        let end = try #require(guide.range(of: "<!-- /ldd -->"))
        let table = guide[start.upperBound..<end.lowerBound]
        // Every backticked name in the table's first column.
        var listed = Set<String>()
        for row in table.split(separator: "\n") where row.hasPrefix("| `") {
            let firstColumn = row.split(separator: "|")[0]
            for (index, part) in firstColumn.split(separator: "`", omittingEmptySubsequences: false).enumerated()
            where index % 2 == 1 {
                listed.insert(String(part))
            }
        }
        #expect(linked == listed, "ldd says \(linked.sorted()); docs/deploy.md lists \(listed.sorted())")
        #expect(!linked.contains { $0.hasPrefix("libswift") || $0.hasPrefix("libFoundation") || $0.contains("curl") })
        let help = try await ChildProcess.run(binary, ["--help"])
        #expect(help.status == 0 && help.output.contains("serve") && help.output.contains("probe"))
        #expect(!help.output.contains("  demo ") && !help.output.contains("  shop "), "\(help.output)")
        #expect(Self.subcommands(ofHelp: help.output) == (try Self.deployedCommands()), "\(help.output)")
        #expect(guide.contains(Self.buildCommand))
    }
}
