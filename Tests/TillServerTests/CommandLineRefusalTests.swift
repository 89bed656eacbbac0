import Foundation
import NIOCore
import NIOPosix
import Testing
import TillTestSupport

/// A command line `till` refuses is said with the usage of the command that was run, whether the parser refused it or
/// the command did while running (a file it cannot read, a value it does not know): never with the root's
/// `till <subcommand>`, which sends the user to the wrong help.
@Suite struct CommandLineRefusalTests {
    @Test(arguments: [
        (
            ["inspect", "jws", "--type", "bogus"],
            "Error: unknown type bogus; use auto, transaction, renewalInfo, appTransaction or notification",
            "till inspect jws"
        ),
        (
            ["inspect", "receipt", "--root", "/nonexistent/root.cer"],
            "Error: cannot read root certificate file /nonexistent/root.cer",
            "till inspect receipt"
        ),
        (["inspect", "jws", "--bogus"], "Error: Unknown option '--bogus'", "till inspect jws"),
    ])
    func aRefusalShowsTheUsageOfTheCommandRun(arguments: [String], message: String, command: String) async throws {
        let run = try await TillExecutable.run(arguments, input: "")
        #expect(run.status == 64, "\(run)")
        #expect(run.errors.contains(message + "\n"), "\(run)")
        #expect(run.errors.contains("Usage: \(command) ["), "\(run)")
        #expect(run.errors.contains("See '\(command) --help' for more information."), "\(run)")
        #expect(!run.errors.contains("Usage: till <subcommand>"), "\(run)")
    }
}

extension CommandLineRefusalTests {
    /// `till import` to an address where no server listens says so and exits 1: it tried again to connect for 90 s
    /// in silence (the client's default), then printed the socket's error alone.
    @Test func anImportToAServerThatIsNotRunningSaysSo() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("till-import-\(UUID()).csv")
        try Data("customerId,transactionId\nana,2000000000000001\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try await TillExecutable.run(
            ["import", "--app", "com.example.till", "--url", "http://127.0.0.1:1", "--token", "operator", file.path],
            timeout: .seconds(30)
        )
        #expect(run.status == 1, "\(run)")
        #expect(run.errors.contains("Error: cannot reach till serve at http://127.0.0.1:1 ("), "\(run)")
        #expect(run.errors.contains("is it running there?"), "\(run)")
    }

    /// A server that takes the connection and closes it without an answer is there, so the command does not ask
    /// whether it is running: it says the import got no answer. Every failure of the first request was "cannot reach".
    @Test func anImportThatGetsNoAnswerSaysSoNotThatTheServerIsAway() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("till-import-\(UUID()).csv")
        try Data("customerId,transactionId\nana,2000000000000001\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in channel.close() }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(listener.localAddress?.port)
        defer { listener.close(promise: nil) }
        let run = try await TillExecutable.run(
            [
                "import", "--app", "com.example.till", "--url", "http://127.0.0.1:\(port)", "--token", "operator",
                file.path,
            ],
            timeout: .seconds(30)
        )
        #expect(run.status == 1, "\(run)")
        #expect(
            run.errors.contains("Error: till serve at http://127.0.0.1:\(port) did not answer the import ("),
            "\(run)"
        )
        #expect(!run.errors.contains("is it running there?"), "\(run)")
    }

    /// A file larger than the server takes in one import is refused before it is read or sent, with the limit and
    /// what to do: it was read whole into memory, then cut off by the server halfway through its upload. The file is
    /// sparse, so the test writes nothing of its size.
    @Test func anImportOfAFileLargerThanTheServerTakesIsRefusedBeforeItIsSent() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("till-import-\(UUID()).csv")
        try Data("customerId,transactionId\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: 300 << 20)
        try handle.close()
        let run = try await TillExecutable.run(
            ["import", "--app", "com.example.till", "--url", "http://127.0.0.1:1", "--token", "operator", file.path],
            timeout: .seconds(30)
        )
        #expect(run.status == 64, "\(run)")
        #expect(
            run.errors.contains(
                "Error: \(file.path) is 300 MiB; till serve takes at most 256 MiB in one import: split it into files of at most that size and import each"
            ),
            "\(run)"
        )
        #expect(!run.errors.contains("cannot reach"), "\(run)")
    }
}

extension CommandLineRefusalTests {
    /// A negative port is a port the settings refuse in words, as `TILL_HTTP_PORT=-5` is: ArgumentParser read `-5` as
    /// an option and said `Missing value for '--port <port>'`.
    @Test(arguments: [("--port", "http.port"), ("--simulator-port", "simulator.port")])
    func aNegativePortIsRefusedAsAPort(flag: String, key: String) async throws {
        let run = try await TillExecutable.run(["serve", flag, "-5", "--database-url", ":memory:"], input: "")
        #expect(run.status == 64, "\(run)")
        #expect(run.errors.contains("Error: \(key) is a whole number from 0 to 65535, not -5"), "\(run)")
    }
}

extension CommandLineRefusalTests {
    /// `till check` (as `backup` and `restore`) of a database it cannot reach says so once, as its error: it also
    /// logged the serving server's words for an outage, "requests wait up to 5.0 seconds for it, then get 503".
    @Test func aCheckOfADatabaseItCannotReachSaysSoOnce() async throws {
        let run = try await TillExecutable.run(
            ["check", "--database-url", "postgres://till@127.0.0.1:1/till"],
            input: "",
            timeout: .seconds(30)
        )
        #expect(run.status == 1, "\(run)")
        let lines = run.errors.split(separator: "\n")
        #expect(lines.count == 1, "\(run)")
        #expect(lines.first?.hasPrefix("Error: storage unavailable (unreachable): ") == true, "\(run)")
        #expect(!run.errors.contains("503"), "\(run)")
    }
}
