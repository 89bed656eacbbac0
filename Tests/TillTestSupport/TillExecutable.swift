import Foundation

/// The built `till` executable, run as a user runs it: arguments, standard input, and what it prints.
public enum TillExecutable {
    /// SwiftPM builds it beside the test bundle (`.build/debug/till`).
    public static let url: URL? = {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [
            beside.appendingPathComponent("till"),
            beside.deletingLastPathComponent().appendingPathComponent("till"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    /// The executable, or a failure saying how to get it (`swift build`).
    public static func require() throws -> URL {
        guard let url else { throw TestSupportFailure("no till executable next to the tests: run swift build first") }
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

    /// Runs `till` with `arguments` and waits for it to exit; kills it after `timeout`.
    public static func run(
        _ arguments: [String],
        input: String? = nil,
        directory: URL? = nil,
        environment extra: [String: String] = [:],
        timeout: Duration = .seconds(60)
    ) async throws -> Run {
        let process = Process()
        process.executableURL = try require()
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        process.environment = environment(extra)
        let output = Pipe()
        let errors = Pipe()
        let standardInput = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = standardInput
        let (exits, exit) = AsyncStream.makeStream(of: Int32.self)
        process.terminationHandler = { process in
            exit.yield(process.terminationStatus)
            exit.finish()
        }
        try ChildProcess.launch(process)
        // A `till` that exits without reading all of its input is answered by its status and output, not by a
        // trap: Foundation's `write(_:)` is a `try!`, and the pipe's EPIPE would have stopped the test process.
        try? ChildProcess.write(Data((input ?? "").utf8), to: standardInput.fileHandleForWriting)
        async let out = ChildProcess.readAllInBackground(output.fileHandleForReading)
        async let err = ChildProcess.readAllInBackground(errors.fileHandleForReading)
        let status = try await withThrowingTaskGroup(of: Int32?.self) { group in
            group.addTask {
                for await status in exits { return status }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let status else {
            process.terminate()
            throw TestSupportFailure(
                "till \(arguments.joined(separator: " ")) did not exit within \(timeout): "
                    + String(decoding: await out, as: UTF8.self)
            )
        }
        return Run(
            status: status,
            output: String(decoding: await out, as: UTF8.self),
            errors: String(decoding: await err, as: UTF8.self)
        )
    }
}

/// A test helper's failure, with what went wrong.
public struct TestSupportFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
