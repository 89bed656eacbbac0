import Foundation
import Testing
import TillTestSupport

/// The child-process helpers every test that starts `python3` or `till` goes through.
@Suite(.sharingTheMachine)
struct ChildProcessTests {
    /// A child that exits without reading its standard input: writing to it fails with EPIPE. Foundation's
    /// `FileHandle.write(_:)` is a `try!` and trapped (SIGILL, the whole test process); the helper throws instead.
    @Test func writingToAChildThatExitedThrowsInsteadOfTrapping() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "exit 3"]
        let stdin = Pipe()
        process.standardInput = stdin
        try ChildProcess.launch(process)
        process.waitUntilExit()
        #expect(process.terminationStatus == 3)
        // More than a pipe holds, in case the kernel took the first bytes before it noticed the reader was gone.
        #expect(throws: (any Error).self) {
            try ChildProcess.write(Data(repeating: 0x7B, count: 1 << 20), to: stdin.fileHandleForWriting)
        }
    }

    /// `till` run as a user runs it, given more input than a pipe holds, exits without reading it: it is answered by
    /// its status and output (its input comes from a file), and the test process lives on.
    @Test func aTillThatIgnoresItsInputIsAnsweredByItsStatusAndOutput() async throws {
        let run = try await TillExecutable.run(["--version"], input: String(repeating: "{", count: 1 << 20))
        #expect(run.status == 0 && !run.output.isEmpty, "\(run)")
    }
}
