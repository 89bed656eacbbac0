import Foundation
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
