import Foundation
import Testing
import TillTestSupport

/// TillClient as an app gets it: the package in Client/, added by path to an app's package at StoreKit 2's floors
/// (iOS 15, macOS 12, tvOS 15, watchOS 8, visionOS 1). Its dependency graph has no SwiftNIO, and SwiftPM accepts it
/// for each Apple platform at its floor and refuses it one version below (visionOS 1 is the first visionOS).
///
/// There is no Apple SDK on Linux, so the builds for Apple triples stop at the compiler ("unable to load standard
/// library"); SwiftPM checks every product's platforms against the app's before it compiles anything, and that
/// check is what runs here. The compile itself is AppleSourcesTests'.
@Suite(.sharingTheMachine, .serialized)
struct ClientPackageTests {
    static let client = AppleSourcesTests.package.appendingPathComponent("Client")

    /// The app's package, kept under the build folder so that its dependencies resolve once.
    static func consumer(floors: [String: String]) throws -> URL {
        let (scratch, _) = try AppleSourcesTests.build()
        let folder = scratch.appendingPathComponent("client-consumer")
        let sources = folder.appendingPathComponent("Sources/App")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        let platforms = ["iOS", "macOS", "tvOS", "watchOS", "visionOS"]
            .map { #".\#($0)("\#(floors[$0]!)")"# }.joined(separator: ", ")
        // Line by line: a line of this file starting with `import` would read as an import of the test target.
        let manifest = [
            "// swift-tools-version: 6.0",
            "import PackageDescription",
            "",
            "let package = Package(",
            "    name: \"App\",",
            "    platforms: [\(platforms)],",
            "    dependencies: [.package(path: \"\(client.path)\")],",
            "    targets: [.target(name: \"App\", dependencies: [.product(name: \"TillClient\", package: \"Client\")])]",
            ")",
            "",
        ].joined(separator: "\n")
        try manifest.write(to: folder.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        try "import TillClient\n".write(
            to: sources.appendingPathComponent("App.swift"),
            atomically: true,
            encoding: .utf8
        )
        // SwiftPM looks for Apple's `libtool` when it plans a build for an Apple triple; any program will do, as
        // nothing gets as far as linking.
        let bin = folder.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let libtool = bin.appendingPathComponent("libtool")
        try "#!/bin/sh\nexit 0\n".write(to: libtool, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: libtool.path)
        return folder
    }

    static let floors = ["iOS": "15.0", "macOS": "12.0", "tvOS": "15.0", "watchOS": "8.0", "visionOS": "1.0"]

    static func swift(_ arguments: [String], in folder: URL) async throws -> (status: Int32, output: String) {
        let path = folder.appendingPathComponent("bin").path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "")
        // At the lowest CPU priority, as AppleSourcesTests' compilers: batch work beside suites that run servers.
        return try await ChildProcess.run(
            "/usr/bin/env",
            ["PATH=\(path)", "nice", "-n", "19", "swift"] + arguments,
            in: folder
        )
    }

    @Test(.timeLimit(.minutes(20)))
    func theClientsDependencyGraphHasNoSwiftNIO() async throws {
        let folder = try Self.consumer(floors: Self.floors)
        let shown = try await Self.swift(["package", "show-dependencies", "--format", "json"], in: folder)
        try #require(shown.status == 0, "\(shown.output)")
        let start = try #require(shown.output.firstIndex(of: "{"), "\(shown.output)")
        let tree = try #require(
            try JSONSerialization.jsonObject(with: Data(shown.output[start...].utf8)) as? [String: Any]
        )
        var identities: Set<String> = []
        func walk(_ node: [String: Any]) {
            identities.insert(node["identity"] as? String ?? "")
            for child in node["dependencies"] as? [[String: Any]] ?? [] { walk(child) }
        }
        walk(tree)
        #expect(identities.contains("client") && identities.contains("swift-openapi-urlsession"), "\(identities)")
        let server = identities.filter {
            $0.hasPrefix("swift-nio") || ["async-http-client", "hummingbird", "sql-kit"].contains($0)
        }
        #expect(server.isEmpty, "the client package depends on \(server.sorted())")
    }

    @Test(
        .timeLimit(.minutes(20)),
        arguments: [
            ("iOS", "arm64-apple-ios", "14.0"), ("macOS", "arm64-apple-macosx", "11.0"),
            ("tvOS", "arm64-apple-tvos", "14.0"), ("watchOS", "arm64_32-apple-watchos", "7.0"),
            ("visionOS", "arm64-apple-xros", ""),
        ]
    )
    func anAppAtTheFloorTakesTheClientAndOneBelowItIsRefused(
        platform: String,
        triple: String,
        below: String
    ) async throws {
        let floor = try #require(Self.floors[platform])
        let folder = try Self.consumer(floors: Self.floors)
        let atFloor = try await Self.swift(["build", "--triple", triple + floor], in: folder)
        #expect(!atFloor.output.contains("which requires"), "\(atFloor.output)")
        #expect(atFloor.output.contains("unable to load standard library"), "\(atFloor.output)")

        guard !below.isEmpty else { return }
        var lower = Self.floors
        lower[platform] = below
        let refusing = try Self.consumer(floors: lower)
        let belowFloor = try await Self.swift(["build", "--triple", triple + below], in: refusing)
        let name = platform == "visionOS" ? "visionos" : platform.lowercased()
        #expect(
            belowFloor.output.contains("depends on the product 'TillClient' which requires \(name) \(floor)"),
            "\(belowFloor.output)"
        )
    }
}
