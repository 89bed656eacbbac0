import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A long-running `till` (`serve`, `simulator`) started as a user starts it, in a process of its own.
///
/// It is ready once its banner names its address (`… on http://127.0.0.1:PORT`); everything it prints is kept,
/// for a failing test to show.
public final class TillProcess: Sendable {
    public let process: Process
    /// `http://127.0.0.1:PORT`, from the banner.
    public let base: String
    /// Ends with the exit status; any number of callers may await it.
    private let exited: Task<Int32, Never>
    private let printed: PrintedLines

    private init(process: Process, base: String, exited: Task<Int32, Never>, printed: PrintedLines) {
        self.process = process
        self.base = base
        self.exited = exited
        self.printed = printed
    }

    /// What it printed so far (standard output and error).
    public var output: String { printed.text }

    /// Starts `till arguments` with `environment` (see `TillExecutable.environment`) and waits up to `timeout`
    /// for the banner; or, given the `base` it will listen at, returns at once (to watch it start).
    public static func start(
        _ arguments: [String],
        environment: [String: String] = [:],
        directory: URL? = nil,
        timeout: Duration = .seconds(60),
        base known: String? = nil
    ) async throws -> TillProcess {
        let process = Process()
        process.executableURL = try TillExecutable.require()
        process.arguments = arguments
        process.environment = TillExecutable.environment(environment)
        if let directory { process.currentDirectoryURL = directory }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        let (exits, exit) = AsyncStream.makeStream(of: Int32.self)
        process.terminationHandler = { process in
            // A clean exit's status, or the signal that ended the process.
            exit.yield(process.terminationStatus)
            exit.finish()
        }
        // Each reader thread says when its pipe reached its end: a process's last lines (standard output, block
        // buffered into a pipe, is written at exit) are read after the exit is known, and the exit status waits for
        // them, so that `output` after `exitStatus()` holds everything printed.
        let (closes, close) = AsyncStream.makeStream(of: Void.self)
        let exited = Task {
            var status: Int32?
            for await code in exits {
                status = code
                break
            }
            await Self.drained(closes, pipes: 2, within: .seconds(10))
            return status ?? process.terminationStatus
        }
        let printed = PrintedLines()
        let (lines, feed) = AsyncStream.makeStream(of: String.self)
        try ChildProcess.launch(process)
        for (pipe, isOutput) in [(output, true), (errors, false)] {
            Thread.detachNewThread {
                var pending = Data()
                ChildProcess.readChunks(pipe.fileHandleForReading) { chunk in
                    pending.append(chunk)
                    while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                        let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                        pending = Data(pending[(newline + 1)...])
                        printed.append(line)
                        if isOutput { feed.yield(line) }
                    }
                }
                if isOutput { feed.finish() }
                close.yield(())
            }
        }
        if let known {
            // Someone must read the lines for the pipe not to fill.
            Task { for await _ in lines {} }
            return TillProcess(process: process, base: known, exited: exited, printed: printed)
        }
        let found = try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask {
                for await line in lines {
                    // A line that ends right after " on http://" names no address: keep reading.
                    if let range = line.range(of: " on http://"),
                        let address = line[range.upperBound...].split(separator: " ").first
                    {
                        return "http://" + address
                    }
                }
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
        guard let base = found else {
            process.terminate()
            throw TestSupportFailure("till \(arguments.joined(separator: " ")) never listened:\n\(printed.text)")
        }
        return TillProcess(process: process, base: base, exited: exited, printed: printed)
    }

    /// Returns once `pipes` readers said they reached their pipe's end, or after `within` (a child of the process
    /// may hold a pipe open after it exits).
    private static func drained(_ closes: AsyncStream<Void>, pipes: Int, within: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                var closed = 0
                for await _ in closes {
                    closed += 1
                    if closed == pipes { return }
                }
            }
            group.addTask { try? await Task.sleep(for: within) }
            await group.next()
            group.cancelAll()
        }
    }

    public func kill(_ signal: Int32) {
        #if canImport(Glibc)
            _ = Glibc.kill(process.processIdentifier, signal)
        #else
            _ = Darwin.kill(process.processIdentifier, signal)
        #endif
    }

    /// The exit status (0 for a clean exit) or the signal that ended the process.
    public func exitStatus() async -> Int32 {
        await exited.value
    }

    /// Stops it as an operator would (SIGTERM: a graceful shutdown), and kills it if it has not exited after
    /// `grace`.
    @discardableResult
    public func stop(grace: Duration = .seconds(15)) async -> Int32 {
        guard process.isRunning else { return process.terminationStatus }
        kill(SIGTERM)
        let status = await withTaskGroup(of: Int32?.self) { group in
            group.addTask { await self.exitStatus() }
            group.addTask {
                try? await Task.sleep(for: grace)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        if let status { return status }
        kill(SIGKILL)
        return await exitStatus()
    }
}

/// Lines a process printed, appended by the threads reading its pipes.
final class PrintedLines: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var text: String { lines.withLock { $0.joined(separator: "\n") } }
}
