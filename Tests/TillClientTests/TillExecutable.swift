import Foundation

/// The built `till` executable, run as a user runs it: arguments, standard input, and what it prints.
enum TillExecutable {
    static let url: URL? = {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [
            beside.appendingPathComponent("till"),
            beside.deletingLastPathComponent().appendingPathComponent("till"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    struct Run: CustomStringConvertible {
        var status: Int32
        var output: String
        var errors: String

        var description: String { "exit \(status)\n--- stdout\n\(output)\n--- stderr\n\(errors)" }

        /// Standard output as JSON.
        func json() throws -> [String: Any] {
            guard let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any] else {
                throw Failure(description: "not a JSON object: \(output)")
            }
            return object
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Runs `till` with `arguments` and waits for it to exit; kills it after `timeout`.
    static func run(
        _ arguments: [String],
        input: String? = nil,
        directory: URL? = nil,
        timeout: Duration = .seconds(60)
    ) async throws -> Run {
        guard let url else { throw Failure(description: "no till executable next to the tests") }
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TILL_") }
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
        try process.run()
        if let input { standardInput.fileHandleForWriting.write(Data(input.utf8)) }
        try standardInput.fileHandleForWriting.close()
        async let out = readAll(output.fileHandleForReading)
        async let err = readAll(errors.fileHandleForReading)
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
            throw Failure(
                description: "till \(arguments.joined(separator: " ")) did not exit within \(timeout): "
                    + String(decoding: await out, as: UTF8.self)
            )
        }
        return Run(
            status: status,
            output: String(decoding: await out, as: UTF8.self),
            errors: String(decoding: await err, as: UTF8.self)
        )
    }

    /// Reads a pipe to its end on a thread of its own (a full pipe would block the process).
    private static func readAll(_ handle: FileHandle) async -> Data {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: handle.readDataToEndOfFile()) }
        }
    }
}
