import Foundation
import Testing
import TillCore
import TillLedger
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// A release as the people who use it meet it (docs/releasing.md): one version stated by CHANGELOG.md, the code and
/// `till --version`; and TillClient taken by an app's package by the repository's URL and that version: resolved on
/// every run, and, in a release's own check, built and buying over the simulator and a server.
@Suite(.sharingTheMachine, .serialized)
struct ClientReleaseTests {
    static let package = AppleSourcesTests.package
    static let bundleId = "com.example.till"

    @Test(
        .enabled(if: Prerequisite.tillExecutable.shouldRun, Comment(rawValue: Prerequisite.tillExecutable.skipMessage))
    )
    func theChangelogTheCodeAndTillVersionStateOneVersion() async throws {
        let changelog = try String(contentsOf: Self.package.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        // What landed since the last release waits under `## Unreleased`, at the top and nowhere else; the first
        // heading below it is the version this tree is.
        // Tools/release's rule: a heading's first word names it.
        let headings = changelog.split(separator: "\n").filter { $0.hasPrefix("## ") }
        let unreleased = { (line: Substring) in line.dropFirst(3).split(separator: " ").first == "Unreleased" }
        #expect(!headings.dropFirst().contains(where: unreleased), "Unreleased is not the top heading")
        let heading = try #require(headings.first { !unreleased($0) })
        let stated = heading.dropFirst(3).split(separator: " ").first.map(String.init)
        #expect(stated == TillRelease.version, "CHANGELOG.md's top heading: \(heading)")
        #expect(TillRelease.version.wholeMatch(of: /(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)/) != nil)

        let run = try await TillExecutable.run(["--version"])
        #expect(
            run.status == 0 && run.output.trimmingCharacters(in: .whitespacesAndNewlines) == TillRelease.version,
            "\(run)"
        )
    }

    /// git, in `folder`, as someone with a name (a release's tags are annotated).
    static func git(_ arguments: [String], in folder: URL) async throws -> String {
        let run = try await ChildProcess.run(
            "/usr/bin/env",
            [
                "GIT_AUTHOR_NAME=Till tests", "GIT_AUTHOR_EMAIL=tests@till.invalid", "GIT_COMMITTER_NAME=Till tests",
                "GIT_COMMITTER_EMAIL=tests@till.invalid", "git",
            ] + arguments,
            in: folder
        )
        try #require(run.status == 0, "git \(arguments.joined(separator: " ")): \(run.output)")
        return run.output
    }

    /// A clone of this repository, with what the work tree changed in the release's own files (Client/,
    /// CHANGELOG.md, Tools/release) committed on top: the test releases what is on disk.
    static func clone(into folder: URL) async throws -> URL {
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let clone = folder.appendingPathComponent("till")
        _ = try await git(["clone", "--quiet", "--no-local", Self.package.path, clone.path], in: folder)
        let copy = try await ChildProcess.run(
            "/bin/bash",
            [
                "-c",
                #"""
                set -euo pipefail
                rm -rf "$1/Client"
                git ls-files -z -co --exclude-standard -- Client CHANGELOG.md Tools/release |
                    while IFS= read -r -d '' file; do
                        if [ -e "$file" ]; then cp --parents "$file" "$1"; fi
                    done
                """#,
                "copy", clone.path,
            ],
            in: Self.package
        )
        try #require(copy.status == 0, "\(copy.output)")
        _ = try await git(["add", "-A"], in: clone)
        if try await !git(["status", "--porcelain"], in: clone).isEmpty {
            _ = try await git(["commit", "--quiet", "-m", "The work tree's release files"], in: clone)
        }
        return clone
    }

    /// What landed since the release this tree states waits in CHANGELOG.md under `## Unreleased`, which
    /// Tools/release refuses to tag (a release renames the heading first). The clone is released as the version it
    /// states: the section is taken out of its CHANGELOG.md and committed, once the refusal was seen.
    static func setAsideUnreleased(in repository: URL) async throws {
        let file = repository.appendingPathComponent("CHANGELOG.md")
        let text = try String(contentsOf: file, encoding: .utf8)
        guard let start = text.range(of: "\n## Unreleased\n") else { return }
        let refused = try await ChildProcess.run(
            "/usr/bin/env",
            ["bash", "Tools/release", TillRelease.version],
            in: repository
        )
        try #require(refused.status != 0 && refused.output.contains("still Unreleased"), "\(refused.output)")
        let end = text.range(of: "\n## ", range: start.upperBound..<text.endIndex)?.lowerBound ?? text.endIndex
        try (String(text[..<start.lowerBound]) + String(text[end...])).write(
            to: file,
            atomically: true,
            encoding: .utf8
        )
        _ = try await git(
            ["commit", "--quiet", "-am", "The release this tree states, without what is unreleased"],
            in: repository
        )
    }

    /// docs/client.md's app manifest, with the clone's URL in place of the published one.
    static func manifest(repository: URL) throws -> String {
        let guide = try String(contentsOf: Self.package.appendingPathComponent("docs/client.md"), encoding: .utf8)
        let blocks = guide.components(separatedBy: "```swift\n").dropFirst().map {
            $0.components(separatedBy: "\n```")[0]
        }
        let manifest = try #require(
            blocks.first { $0.contains("import PackageDescription") && $0.contains("name: \"MyApp\"") },
            "docs/client.md has no app manifest"
        )
        let published = "https://git.example.com/till.git"
        try #require(
            manifest.contains(published) && manifest.contains("from: \"\(TillRelease.version)\""),
            "docs/client.md's manifest names \(published) and the version \(TillRelease.version)"
        )
        return manifest.replacingOccurrences(of: published, with: "file://" + repository.path) + "\n"
    }

    /// The app: buys gems.100 and pro when asked, and says what the customer has, from the verified snapshot.
    static let app = #"""
        import Foundation
        import TillClient

        let arguments = CommandLine.arguments   // server, app key, simulator, device, folder, and maybe "buy"
        let purchases = try PurchaseCoordinator(
            storefront: SimulatorStorefront(baseURL: arguments[3], deviceId: arguments[4], bundleId: "com.example.till",
                                            pollInterval: 0.2),
            server: TillServerClient(baseURL: arguments[1], appKey: arguments[2]),
            bundleId: "com.example.till", customerId: "alice",
            directory: URL(fileURLWithPath: arguments[5], isDirectory: true))
        _ = await purchases.start()
        if arguments.count > 6, arguments[6] == "buy" {
            for productId in ["gems.100", "pro"] {
                let outcome = try await purchases.purchase(Payment(productId: productId))
                guard case .delivered = outcome else {
                    print("\(productId) not delivered: \(outcome)")
                    exit(1)
                }
            }
        }
        print("gems \(await purchases.balance(of: "gems")), pro \(await purchases.isEntitled(to: "pro"))")

        """#

    /// Whether this run is a release's own check (docs/releasing.md): `TILL_RELEASE_CHECK=1` builds an app from the
    /// release's tag and runs it. CI resolves the tag and loads the app's package graph but does not build it: the
    /// build compiles TillClient's dependencies for a package of its own, BoringSSL's C sources half of it, 350 s of
    /// CPU on CI's two cores, about 175 s of a run that has 30 minutes.
    static let isReleaseCheck =
        ProcessInfo.processInfo.environment["TILL_RELEASE_CHECK"].map {
            !$0.isEmpty && $0 != "0" && $0.lowercased() != "false"
        } ?? false

    /// A release tagged by Tools/release on a clone (its tags checked, a second run changing nothing and a lower
    /// version refused), and a fresh app package with docs/client.md's manifest naming the clone's `file://` URL and
    /// `from:` the version. The app's package is kept under the build folder so that its dependencies build once.
    static func releasedApp() async throws -> (app: URL, root: URL) {
        let (scratch, _) = try AppleSourcesTests.build()
        let root = scratch.appendingPathComponent("client-release")
        // A new folder each run: SwiftPM caches a repository by its URL (CI once checked a cached clone out and
        // missed the new release's commit, even with --disable-dependency-cache), so no run's URL is an earlier one's.
        // The clone is still named till, the identity docs/client.md's manifest names.
        let repositories = root.appendingPathComponent("repository")
        try? FileManager.default.removeItem(at: repositories)
        let repository = try await Self.clone(into: repositories.appendingPathComponent(UUID().uuidString))
        try await Self.setAsideUnreleased(in: repository)

        let release = try await ChildProcess.run(
            "/usr/bin/env",
            [
                "GIT_AUTHOR_NAME=Till tests", "GIT_AUTHOR_EMAIL=tests@till.invalid", "GIT_COMMITTER_NAME=Till tests",
                "GIT_COMMITTER_EMAIL=tests@till.invalid", "bash", "Tools/release", TillRelease.version,
            ],
            in: repository
        )
        #expect(release.status == 0, "\(release.output)")
        // The tag an app resolves holds Client/ at its root; the server's tag is the commit itself.
        let files = try await Self.git(["ls-tree", "--name-only", TillRelease.version], in: repository)
        #expect(files.split(separator: "\n").contains("Package.swift") && files.contains("Sources"), "\(files)")
        #expect(
            try await Self.git(["cat-file", "-p", "\(TillRelease.version):Package.swift"], in: repository)
                .contains("name: \"TillClient\"")
        )
        let head = try await Self.git(["rev-parse", "HEAD"], in: repository)
        #expect(try await Self.git(["rev-parse", "till-\(TillRelease.version)^{commit}"], in: repository) == head)
        // The second time changes nothing; a lower version is refused.
        let again = try await ChildProcess.run(
            "/usr/bin/env",
            ["bash", "Tools/release", TillRelease.version],
            in: repository
        )
        #expect(again.status == 0 && again.output.contains("already tagged"), "\(again.output)")
        let lower = try await ChildProcess.run("/usr/bin/env", ["bash", "Tools/release", "0.0.1"], in: repository)
        #expect(lower.status != 0, "\(lower.output)")

        let app = root.appendingPathComponent("app")
        let sources = app.appendingPathComponent("Sources/MyApp")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        try Self.manifest(repository: repository)
            .write(to: app.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        try Self.app.write(to: sources.appendingPathComponent("main.swift"), atomically: true, encoding: .utf8)
        // Each run tags a new commit: what an earlier run resolved is forgotten.
        try? FileManager.default.removeItem(at: root.appendingPathComponent("swiftpm-cache"))
        for stale in [
            "Package.resolved", ".build/repositories", ".build/checkouts/till", ".build/workspace-state.json",
        ] {
            try? FileManager.default.removeItem(at: app.appendingPathComponent(stale))
        }
        return (app, root)
    }

    /// SwiftPM on the app's package, at the lowest CPU priority, without the shared dependency cache.
    static func swift(_ command: [String], app: URL, root: URL) async throws -> (status: Int32, output: String) {
        let cache = ["--disable-dependency-cache", "--cache-path", root.appendingPathComponent("swiftpm-cache").path]
        return try await ChildProcess.run(
            "/usr/bin/env",
            ["nice", "-n", "19", "swift"] + command.prefix(1) + cache + command.dropFirst(),
            in: app
        )
    }

    /// What the app resolved: the release's version, and none of the server's dependencies.
    static func expectResolved(_ app: URL) throws {
        let resolved = try String(contentsOf: app.appendingPathComponent("Package.resolved"), encoding: .utf8)
        #expect(resolved.contains("\"version\" : \"\(TillRelease.version)\""), "\(resolved)")
        #expect(!resolved.contains("hummingbird") && !resolved.contains("swift-nio\""), "\(resolved)")
    }

    /// The release as an app's package takes it, on every run: the tags, and docs/client.md's manifest resolved by
    /// the clone's URL and the version, its package graph loaded (SwiftPM checks there that the product the app names
    /// is one the tag's package has).
    @Test(.timeLimit(.minutes(20)))
    func aReleaseIsTaggedAndAnAppResolvesTillClientByURLAndVersion() async throws {
        let (app, root) = try await Self.releasedApp()
        let shown = try await Self.swift(["package", "show-dependencies", "--format", "json"], app: app, root: root)
        try #require(shown.status == 0, "\(shown.output)")
        // SwiftPM says what it fetched before the graph, as ClientPackageTests reads it.
        let start = try #require(shown.output.firstIndex(of: "{"), "\(shown.output)")
        let graph = try #require(
            try JSONSerialization.jsonObject(with: Data(shown.output[start...].utf8)) as? [String: Any]
        )
        let till = (graph["dependencies"] as? [[String: Any]] ?? []).first { $0["identity"] as? String == "till" }
        #expect(till?["version"] as? String == TillRelease.version, "\(shown.output)")
        try Self.expectResolved(app)
    }

    /// The release's own check (docs/releasing.md, `TILL_RELEASE_CHECK=1`): the app of docs/client.md's manifest,
    /// built from the release's tag and run twice from one folder against a simulator and a server: it buys, sees
    /// 100 gems and pro, and sees them again at its second launch.
    @Test(
        .timeLimit(.minutes(20)),
        .enabled(
            if: isReleaseCheck,
            "builds an app from the release's tag (350 s of CPU): a release's check, TILL_RELEASE_CHECK=1 (docs/releasing.md)"
        )
    )
    func anAppBuiltFromTheReleaseBuysAndSeesItAgainAtItsNextLaunch() async throws {
        let (app, root) = try await Self.releasedApp()
        let built = try await Self.swift(["build", "--product", "MyApp"], app: app, root: root)
        try #require(built.status == 0, "\(built.output)")
        try Self.expectResolved(app)
        let binary = app.appendingPathComponent(".build/debug/MyApp").path

        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                let folder = fixture.directory.appendingPathComponent("my-app").path
                let arguments = [url, fixture.app.appKey, fixture.simulatorURL, fixture.device.id, folder]
                let first = try await ChildProcess.run(binary, arguments + ["buy"])
                #expect(first.status == 0 && first.output.contains("gems 100, pro true"), "\(first.output)")
                let second = try await ChildProcess.run(binary, arguments)
                #expect(second.status == 0 && second.output.contains("gems 100, pro true"), "\(second.output)")
            }
        }
    }
}
