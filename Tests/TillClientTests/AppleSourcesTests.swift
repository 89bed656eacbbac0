import Foundation
import Testing
import TillTestSupport

/// TillClient's files that import StoreKit, SwiftUI, Combine or Network, and the example app, compile on Linux
/// against declaration-only stand-ins of exactly the Apple API they use (Tests/AppleStandIns), which they use whole;
/// and nothing in the client package uses API above its floors outside an availability check.
/// Tests/AppleStandIns/check.py does the work, over the build `swift test` made; see its header.
// Each test compiles Swift while the rest of `swift test` runs beside it: on CI's two cores the whole check took 531 s
// and 566 s in two runs, and went past a 10-minute limit in a third. The limits guard against a hang, not speed.
@Suite(.sharingTheMachine)
struct AppleSourcesTests {
    static let package = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let standIns = package.appendingPathComponent("Tests/AppleStandIns")

    /// SwiftPM's scratch folder and triple, from where this test binary is (`<scratch>/<triple>/debug/…`).
    static func build() throws -> (scratch: URL, triple: String) {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var folder = binary.deletingLastPathComponent()
        while folder.path != "/" {
            let scratch = folder.deletingLastPathComponent().deletingLastPathComponent()
            if folder.lastPathComponent == "debug",
                FileManager.default.fileExists(atPath: scratch.appendingPathComponent("debug.yaml").path)
            {
                return (scratch, folder.deletingLastPathComponent().lastPathComponent)
            }
            folder = folder.deletingLastPathComponent()
        }
        let scratch = package.appendingPathComponent(".build")
        try #require(
            FileManager.default.fileExists(atPath: scratch.appendingPathComponent("debug.yaml").path),
            "no SwiftPM build description (debug.yaml) beside \(binary.path) or in \(scratch.path)"
        )
        return (scratch, "x86_64-unknown-linux-gnu")
    }

    /// Runs check.py at the lowest CPU priority: its compilers are batch work, and the suites beside it run
    /// servers whose answers are waited for (a compiler at full priority on a 2-core machine starves them).
    static func check(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let (scratch, triple) = try build()
        return try await ChildProcess.run(
            "/usr/bin/env",
            [
                "nice", "-n", "19",
                "python3", standIns.appendingPathComponent("check.py").path, "--package", package.path,
                "--scratch", scratch.path, "--triple", triple,
            ] + arguments
        )
    }

    /// A copy of the stand-ins with one file changed.
    static func standInsCopy(_ file: String, _ change: (String) -> String) throws -> URL {
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("till-stand-ins-\(UUID().uuidString)")
        try FileManager.default.copyItem(at: standIns, to: copy)
        let path = copy.appendingPathComponent(file)
        let text = try String(contentsOf: path, encoding: .utf8)
        let changed = change(text)
        try #require(changed != text, "the change to \(file) changed nothing")
        try changed.write(to: path, atomically: true, encoding: .utf8)
        return copy
    }

    /// The whole check, then the proof that its drift test bites both ways: a stand-in declaration nothing uses
    /// fails it, and so does code using an Apple symbol the stand-in lacks.
    @Test(.timeLimit(.minutes(20)))
    func theAppleFilesAndTheExampleCompileAgainstStandInsTheyUseWhole() async throws {
        let (scratch, _) = try Self.build()
        let report = scratch.appendingPathComponent("apple-stand-ins-report.txt")
        let full = try await Self.check(["--report", report.path])
        #expect(full.status == 0, "\(full.output)")
        let listed = (try? String(contentsOf: report, encoding: .utf8)) ?? ""
        for symbol in [
            "StoreKit.Transaction.updates", "StoreKit.SKPaymentQueue", "SwiftUI.View.onInAppPurchaseCompletion",
        ] {
            #expect(listed.contains(symbol), "the report does not list \(symbol):\n\(listed)")
        }

        let unused = try Self.standInsCopy("SwiftUI.swiftinterface") {
            $0 + """

                @available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, visionOS 1.0, *)
                extension SwiftUI.View {
                  nonisolated public func neverUsedByTill() -> some SwiftUI.View
                }

                """
        }
        defer { try? FileManager.default.removeItem(at: unused) }
        let drift = try await Self.check([
            "--only", "drift", "--stand-ins", unused.path, "--work", "apple-stand-ins-unused",
        ])
        #expect(drift.status == 1 && drift.output.contains("SwiftUI.View.neverUsedByTill()"), "\(drift.output)")

        let missing = try Self.standInsCopy("StoreKit.swiftinterface") {
            $0.replacingOccurrences(of: "  public static func sync() async throws\n", with: "")
        }
        defer { try? FileManager.default.removeItem(at: missing) }
        let compile = try await Self.check([
            "--only", "compile", "--stand-ins", missing.path, "--work", "apple-stand-ins-missing",
        ])
        #expect(
            compile.status == 1 && compile.output.contains("type 'AppStore' has no member 'sync'"),
            "\(compile.output)"
        )
    }

    /// The defects Apple's real SDKs show and Linux alone would not, each planted as one more TillClient file: a bare
    /// `Transaction` where SwiftUI is imported (SwiftUI has an animation `Transaction`), a call that only the newest
    /// SDK has outside its `#if compiler(>=…)` (Xcode 16.0 does not compile it), and a public type named like one of
    /// SwiftUI's (an app that imports both could not write it).
    @Test(
        .timeLimit(.minutes(20)),
        arguments: [
            (
                "ambiguous",
                """
                #if canImport(StoreKit) && canImport(SwiftUI)
                    import StoreKit
                    import SwiftUI

                    func plantedBareTransaction(_ verification: VerificationResult<Transaction>) {}
                #endif
                """,
                ["the iOS 26 SDK", "'Transaction' is ambiguous for type lookup"],
                "iOS 26"
            ),
            (
                "newest",
                """
                #if canImport(StoreKit)
                    import StoreKit

                    func plantedNewestCall(_ jws: String) -> [Product.PurchaseOption] {
                        Product.PurchaseOption.promotionalOffer("offer", compactJWS: jws)
                    }
                #endif
                """,
                ["the iOS 18.0 SDK (Xcode 16.0)", "extra argument 'compactJWS' in call"],
                "iOS 18.0"
            ),
            (
                "name",
                "public struct SnapshotResponse {}\n",
                ["TillClient.SnapshotResponse has the name of SwiftUI.SnapshotResponse"],
                "iOS 26"
            ),
        ]
    )
    func aPlantedDefectThatOnlyApplesSDKWouldShowFailsTheCheck(
        name: String,
        source: String,
        expected: [String],
        sdk: String
    ) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("till-plant-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let planted = folder.appendingPathComponent("Planted.swift")
        try source.write(to: planted, atomically: true, encoding: .utf8)
        let checked = try await Self.check([
            "--only", "compile", "--add-client-source", planted.path, "--work", "apple-stand-ins-plant-\(name)",
            // Only the SDK that shows the defect (the newest for a name: the symbol graphs read what it compiled):
            // the whole check compiles with every SDK, and three more times cost CI a minute of CPU.
            "--sdk", sdk,
        ])
        #expect(checked.status == 1, "\(checked.output)")
        for text in expected {
            #expect(checked.output.contains(text), "\(text): \(checked.output)")
        }
    }

    /// The docs' Swift examples are compiled too (Tests/AppleStandIns/DocExamples holds each, line for line, and each
    /// snippet of a code span, a table's cell included, as written): an example edited in the docs alone fails the
    /// check.
    @Test(.timeLimit(.minutes(20)))
    func aDocExampleThatIsNotCompiledFailsTheCheck() async throws {
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("till-docs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: copy) }
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: Self.package.appendingPathComponent("README.md"),
            to: copy.appendingPathComponent("README.md")
        )
        try FileManager.default.copyItem(
            at: Self.package.appendingPathComponent("docs"),
            to: copy.appendingPathComponent("docs")
        )
        let guide = copy.appendingPathComponent("docs/client.md")
        let text = try String(contentsOf: guide, encoding: .utf8)
        let edited = text.replacingOccurrences(
            of: "let launch = await purchases.start()",
            with: "let launch = await purchases.launch()"
        )
        try #require(edited != text, "docs/client.md no longer has the example this test edits")
        try edited.write(to: guide, atomically: true, encoding: .utf8)
        // A snippet in a table's cell is Swift too: found, as written, in DocExamples.
        let offers = copy.appendingPathComponent("docs/offers.md")
        let table = try String(contentsOf: offers, encoding: .utf8)
        let cell = table.replacingOccurrences(
            of: "`product.purchase(options: [.introductoryOfferEligibility(compactJWS: jws)])`",
            with: "`product.purchase(options: [.introductoryOfferEligibility(jws)])`"
        )
        try #require(cell != table, "docs/offers.md no longer has the table cell this test edits")
        try cell.write(to: offers, atomically: true, encoding: .utf8)
        let checked = try await Self.check([
            "--only", "compile", "--docs", copy.path, "--work", "apple-stand-ins-docs",
        ])
        #expect(
            checked.status == 1 && checked.output.contains("not found line for line")
                && checked.output.contains("docs/client.md:")
                && checked.output.contains("docs/offers.md:19: `product.purchase(options: [.introductoryOfferEligibility(jws)])`"),
            "\(checked.output)"
        )
    }
}
