import Foundation
import Testing
import TillTestSupport

/// Runs the judge scripts in `judge/`, which use Apple's official App Store Server Library for Python.
///
/// Without the library a judge test is skipped with a message on a developer's machine, but fails when the
/// environment variable `CI` is set: CI must never go green by skipping the judge.
enum PythonJudge {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("judge")

    static var libraryInstalled: Bool { Prerequisite.applesPythonLibrary.isAvailable }

    /// The condition of a judge test: run where the library is installed, and always on CI.
    static var enabled: Bool { Prerequisite.applesPythonLibrary.shouldRun }

    static let skipMessage = Comment(rawValue: Prerequisite.applesPythonLibrary.skipMessage)

    /// Fails the test when the library is missing (only reached on CI, where the test is never skipped).
    static func requireLibrary() throws {
        try #require(
            libraryInstalled,
            "CI is set but Apple's app-store-server-library for Python is not installed: the judge cannot run"
        )
    }

    /// Runs `judge/<script>` with `spec` as JSON on standard input; returns its exit status and its JSON summary.
    /// (`ChildProcess.runPython`: swift-subprocess, which blocks no thread of the cooperative pool the simulator
    /// under test answers the judge from).
    static func run(_ script: String, spec: [String: Any]) async throws -> (status: Int32, summary: [String: Any]) {
        let input = try JSONSerialization.data(withJSONObject: spec)
        let path = directory.appendingPathComponent(script).path
        let (status, output) = try await ChildProcess.runPython(path, input: input)
        let summary = try #require(
            try? JSONSerialization.jsonObject(with: output) as? [String: Any],
            "the judge printed no JSON: \(String(decoding: output, as: UTF8.self))"
        )
        return (status, summary)
    }
}
