import Foundation
import Testing
import TillFuzzing
import TillTestSupport

/// The fuzz targets without the fuzzer. One suite for all: the HTTP targets share their worlds (a server, a
/// simulator) process-wide, and a replay closes them to start fresh, so no two of these tests may run at once. Those
/// worlds are live services (a server and a simulator with their workers), so each test takes a share of the machine.
@Suite(.serialized, .sharingTheMachine) enum FuzzTests {}

extension FuzzTests {
    /// Every input that ever failed a fuzz target (a crash, a sanitizer report, a leak, a timeout or a property),
    /// kept in `Regressions/<target>/` and replayed here, each in fresh worlds. `Tools/fuzz` copies new failures
    /// there; the fix lands with its input.
    @Suite struct Regressions {
        static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "Regressions"
        )

        /// `target/file` of every kept input.
        static let cases: [String] = {
            let manager = FileManager.default
            guard let targets = try? manager.contentsOfDirectory(atPath: folder.path) else { return [] }
            return targets.sorted().flatMap { target -> [String] in
                let files = (try? manager.contentsOfDirectory(atPath: folder.appendingPathComponent(target).path)) ?? []
                return files.filter { !$0.hasPrefix(".") && !$0.hasSuffix(".md") }.sorted().map { "\(target)/\($0)" }
            }
        }()

        @Test(arguments: cases) func replays(_ kept: String) async throws {
            let name = String(kept.split(separator: "/")[0])
            let target = try #require(FuzzTargets.named(name), "Regressions/\(name) names no fuzz target")
            let bytes = Array(try Data(contentsOf: Self.folder.appendingPathComponent(kept)))
            await FuzzTargets.resetWorlds()
            try await target.check(bytes)
        }

        @Test func everyTargetHasAFolderOfRegressions() throws {
            let folders = try FileManager.default.contentsOfDirectory(atPath: Self.folder.path).filter {
                !$0.contains(".")
            }
            let names = Set(FuzzTargets.all.map(\.name))
            #expect(
                Set(folders).subtracting(names).isEmpty,
                "folders naming no target: \(Set(folders).subtracting(names))"
            )
        }
    }

    /// The targets without the fuzzer: their seeds satisfy their properties, and a few hundred deterministic mutations
    /// of them (the structure-aware mutators with simple byte mutations) keep the parsers whole. What libFuzzer does for
    /// millions of inputs with AddressSanitizer, in miniature, on every `swift test`.
    @Suite struct Targets {
        @Test(arguments: FuzzTargets.all.map(\.name)) func seedsHoldTheProperties(_ name: String) async throws {
            let target = try #require(FuzzTargets.named(name))
            let seeds = try await target.seeds()
            #expect(seeds.count >= 2, "\(name) has \(seeds.count) seeds")
            await FuzzTargets.resetWorlds()
            for seed in seeds {
                try await target.check(seed.bytes)
            }
        }

        @Test(arguments: FuzzTargets.all.map(\.name)) func mutationsHoldTheProperties(_ name: String) async throws {
            let target = try #require(FuzzTargets.named(name))
            let mutate = try #require(target.mutate, "\(name) has no structure-aware mutator")
            let seeds = try await target.seeds()
            var random = FuzzRandom(seed: 26)
            let bytes = ByteMutator.simple(seed: 26)
            await FuzzTargets.resetWorlds()
            for round in 0..<48 {
                var input = seeds[round % seeds.count].bytes
                for _ in 0..<random.int(1...3) { input = mutate(input, &random, bytes) }
                try await target.check(Array(input.prefix(target.maximumLength)))
            }
        }

        @Test func targetNamesAreStable() {
            let names = FuzzTargets.all.map(\.name)
            #expect(Set(names).count == names.count)
            #expect(names.allSatisfy { $0.allSatisfy { $0.isLowercase || $0 == "-" } })
        }
    }
}
