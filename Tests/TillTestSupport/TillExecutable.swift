import Foundation
import Subprocess
import SystemPackage

/// The built `till` executable, run as a user runs it: arguments, standard input, and what it prints.
public enum TillExecutable {
    /// SwiftPM builds it beside the test bundle (`.build/debug/till`).
    public static let url: URL? = built("till")

    /// The package's executable `name` (`till`, `till-allocations`), where SwiftPM builds it: beside the test bundle.
    public static func built(_ name: String) -> URL? {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [
            beside.appendingPathComponent(name),
            beside.deletingLastPathComponent().appendingPathComponent(name),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    /// The executable `name`, or a failure saying how to get it (`swift build`).
    public static func require(_ name: String = "till") throws -> URL {
        guard let url = built(name) else {
            throw TestSupportFailure("no \(name) executable next to the tests: run swift build first")
        }
        return url
    }

    public struct Run: CustomStringConvertible, Sendable {
        public var status: Int32
        public var output: String
        public var errors: String

        public var description: String { "exit \(status)\n--- stdout\n\(output)\n--- stderr\n\(errors)" }

        /// Standard output as JSON.
        public func json() throws -> [String: Any] {
            guard let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any] else {
                throw TestSupportFailure("not a JSON object: \(output)")
            }
            return object
        }
    }

    /// The environment a child `till` gets: this process's, without its `TILL_…` settings (the tests' own
    /// `TILL_TEST_POSTGRES_URL` among them), plus `extra`.
    public static func environment(_ extra: [String: String] = [:]) -> [String: String] {
        ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TILL_") }.merging(extra) { $1 }
    }

    /// Runs `till` (or the package's executable `program`) with `arguments` and waits for it to exit; kills it after
    /// `timeout`.
    ///
    /// Through swift-subprocess, its input read from a file: a `till` that exits without reading all of its input is
    /// answered by its status and output; the timeout cancels the run, which kills the child.
    public static func run(
        _ arguments: [String],
        input: String? = nil,
        directory: URL? = nil,
        environment extra: [String: String] = [:],
        timeout: Duration = .seconds(60),
        program: String = "till"
    ) async throws -> Run {
        let executable = try require(program)
        let variables = Dictionary(
            uniqueKeysWithValues: environment(extra).map { (Environment.Key(stringLiteral: $0.key), $0.value) }
        )
        return try await withThrowingTaskGroup(of: Run?.self) { group in
            group.addTask {
                let result = try await ChildProcess.withInputFile(Data((input ?? "").utf8)) { file in
                    try await Subprocess.run(
                        .path(FilePath(executable.path)),
                        arguments: Arguments(arguments),
                        environment: .custom(variables),
                        workingDirectory: directory.map { FilePath($0.path) },
                        input: .fileDescriptor(file, closeAfterSpawningProcess: true),
                        output: .string(limit: 64 << 20),
                        error: .string(limit: 64 << 20)
                    )
                }
                return Run(
                    status: ChildProcess.code(result.terminationStatus),
                    output: result.standardOutput,
                    errors: result.standardError
                )
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            guard let first else {
                throw TestSupportFailure("till \(arguments.joined(separator: " ")) did not exit within \(timeout)")
            }
            return first
        }
    }
}

/// A test helper's failure, with what went wrong.
public struct TestSupportFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
