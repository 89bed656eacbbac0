import Foundation
import Subprocess
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Starting child processes and reading their pipes safely from tests that run in parallel.
///
/// Two faults of Foundation's `Process` and `FileHandle` on Linux were met in CI runs: `Process.run()` called from
/// several threads at once crashed (a bad pointer in its copy of the environment), and `availableData` /
/// `readDataToEndOfFile()` trap ("Interrupted system call") when a signal — a child's exit — lands during a read.
/// A child that runs to its end (`run`, `runPython`, and `TillExecutable.run`) goes through swift-subprocess.
/// The children a test keeps running across calls (`till serve` in `TillProcess`, chromedriver in `Browser`) are
/// still `Process`es, which swift-subprocess's scoped runs do not model: they launch here one at a time, and their
/// pipes are read here with reads retried on EINTR.
public enum ChildProcess {
    private static let launching = Mutex(())

    /// SIGPIPE ignored in this process, as SwiftNIO ignores it once a server or client starts (most suites start
    /// one): a write to a child that is gone fails with EPIPE instead of killing the test process.
    private static let ignoringBrokenPipes: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    /// Starts `process`, one launch at a time in this test process.
    public static func launch(_ process: Process) throws {
        try launching.withLock { _ in try process.run() }
    }

    /// Calls `body` with each chunk read from `handle` until its end.
    public static func readChunks(_ handle: FileHandle, _ body: (Data) -> Void) {
        let descriptor = handle.fileDescriptor
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                body(Data(buffer[0..<count]))
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                return
            }
        }
    }

    /// Everything `handle` gives until its end.
    public static func readAll(_ handle: FileHandle) -> Data {
        var data = Data()
        readChunks(handle) { data.append($0) }
        return data
    }

    /// Writes `data` to a child's standard input and closes it, throwing what the write meets (EPIPE when the child
    /// exited without reading it). Foundation's `FileHandle.write(_:)` is a `try!`: it traps instead.
    public static func write(_ data: Data, to handle: FileHandle) throws {
        _ = ignoringBrokenPipes
        defer { try? handle.close() }
        if !data.isEmpty { try handle.write(contentsOf: data) }
    }

    /// Runs `python3 script` with `input` on its standard input; answers its exit status and standard output.
    ///
    /// swift-subprocess drives it without blocking a thread of the cooperative pool (a server under test answers
    /// the script from that same pool); a script that exits before it reads its input fails the test with the
    /// write's error.
    public static func runPython(_ script: String, input: Data) async throws -> (status: Int32, output: Data) {
        // A write to a script that is gone must fail with EPIPE, not kill the test process (swift-subprocess leaves
        // SIGPIPE as it finds it, and no SwiftNIO server may have started yet).
        _ = ignoringBrokenPipes
        let result = try await Subprocess.run(
            .name("python3"),
            arguments: [script],
            input: .data(input),
            output: .data(limit: 1 << 30),
            error: FileDescriptorOutput.currentStandardError
        )
        return (code(result.terminationStatus), result.standardOutput)
    }

    /// Everything `handle` gives until its end, read on a thread of its own (a full pipe would block the child).
    public static func readAllInBackground(_ handle: FileHandle) async -> Data {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: readAll(handle)) }
        }
    }

    /// Runs `executable` with `arguments` to its end: its exit status (or the signal that ended it), and what it
    /// printed on standard output and standard error together.
    ///
    /// Through swift-subprocess, which waits for the child itself rather than for its pipes. The output goes to a
    /// file, not a pipe: a child that leaves a daemon behind (`pg_ctl start`) hands the daemon its output, and a
    /// pipe the daemon holds would never end.
    public static func run(_ executable: String, _ arguments: [String], in directory: URL? = nil) async throws
        -> (status: Int32, output: String)
    {
        let outputPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("till-child-\(UUID().uuidString).out").path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let file = try FileDescriptor.open(
            FilePath(outputPath),
            .writeOnly,
            options: [.create, .truncate],
            permissions: [.ownerReadWrite]
        )
        let result: ExecutionResult<Void, FileDescriptorOutput, CombinedErrorOutput>
        do {
            result = try await Subprocess.run(
                executable.contains("/") ? .path(FilePath(executable)) : .name(executable),
                arguments: Arguments(arguments),
                workingDirectory: directory.map { FilePath($0.path) },
                output: .fileDescriptor(file, closeAfterSpawningProcess: true),
                error: .combinedWithOutput
            )
        } catch {
            throw TestSupportFailure("cannot start \(executable): \(error)")
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return (code(result.terminationStatus), output)
    }

    /// A child's standard input from a file holding `data`: a child that exits without reading it is answered by
    /// its status and output, as no pipe is written to. The file is removed after `body`.
    static func withInputFile<Result>(
        _ data: Data,
        _ body: (FileDescriptor) async throws -> Result
    ) async throws -> Result {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("till-input-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try data.write(to: URL(fileURLWithPath: path))
        return try await body(try FileDescriptor.open(FilePath(path), .readOnly))
    }

    /// The exit code when the child exited, else the signal that ended it (as `Process.terminationStatus` gives).
    public static func code(_ status: TerminationStatus) -> Int32 {
        switch status {
        case .exited(let code): code
        case .signaled(let signal): signal
        }
    }
}
