import Foundation
import Synchronization

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
/// Every test that starts a process goes through here: launches one at a time, reads retried on EINTR.
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
    /// The process is driven from a thread of its own: blocking reads and waits on the cooperative pool would
    /// starve a server under test that answers the script from that same pool.
    public static func runPython(_ script: String, input: Data) async throws -> (status: Int32, output: Data) {
        try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<(status: Int32, output: Data), any Error>) in
            Thread {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                process.arguments = ["python3", script]
                let stdin = Pipe()
                let stdout = Pipe()
                process.standardInput = stdin
                process.standardOutput = stdout
                do {
                    try launch(process)
                    // The throwing write: a script that exits before it reads its input (EPIPE) fails the test
                    // instead of stopping the whole test process.
                    let written = Result { try write(input, to: stdin.fileHandleForWriting) }
                    let output = readAll(stdout.fileHandleForReading)
                    process.waitUntilExit()
                    try written.get()
                    continuation.resume(returning: (process.terminationStatus, output))
                } catch {
                    continuation.resume(throwing: error)
                }
            }.start()
        }
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
    /// Spawned directly (`posix_spawn`) and waited for with `waitpid`, not with Foundation's `Process`: `Process`
    /// learns that a child ended when a socket the child inherited closes, so a child that leaves a daemon behind
    /// (`pg_ctl start`: the daemon inherits the socket) is never seen to end, and `waitUntilExit()` spins forever.
    /// The output goes to a file for the same reason: a daemon holding a pipe would keep it open.
    public static func run(_ executable: String, _ arguments: [String], in directory: URL? = nil) async throws
        -> (status: Int32, output: String)
    {
        // A directory is entered by a shell that then becomes the program (glibc's spawn-time chdir is not
        // visible to Swift).
        let (program, argv): (String, [String]) =
            if let directory {
                ("/bin/sh", ["sh", "-c", #"cd "$0" && exec "$@""#, directory.path, executable] + arguments)
            } else {
                (executable, [executable] + arguments)
            }
        let outputPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("till-child-\(UUID().uuidString).out").path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { for argument in cArguments { free(argument) } }
        var pid = pid_t()
        let spawned = posix_spawnp(&pid, program, &actions, nil, cArguments, environ)
        guard spawned == 0 else {
            throw TestSupportFailure("cannot start \(executable): \(String(cString: strerror(spawned)))")
        }
        let child = pid
        let status = await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            // A thread of its own: waitpid blocks.
            Thread.detachNewThread {
                var status: Int32 = 0
                while waitpid(child, &status, 0) == -1 && errno == EINTR {}
                continuation.resume(returning: status)
            }
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // The exit code when it exited, else the signal that ended it (as `Process.terminationStatus` gives).
        let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : status & 0x7F
        return (code, output)
    }
}
