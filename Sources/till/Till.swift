import ArgumentParser
import Foundation
import TillCore

#if Demo
    import TillDemo
#endif

/// The `till` command: a thin layer over the libraries' build functions.
@main
struct Till: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "till",
        abstract: "Till: a self-hosted in-app purchase backend.",
        version: TillRelease.version,
        subcommands: [
            ServeCommand.self, ProbeCommand.self, BackupCommand.self, CheckCommand.self, RestoreCommand.self,
            ImportCommand.self, SimulatorCommand.self,
        ] + demoCommands + [Inspect.self, Bench.self]
    )

    /// `demo` and `shop`, in a build with the `Demo` trait (the default): the deployed binary has neither.
    #if Demo
        static let demoCommands: [any ParsableCommand.Type] = [DemoCommand.self, ShopCommand.self]
    #else
        static let demoCommands: [any ParsableCommand.Type] = []
    #endif

    /// ArgumentParser's `main`, but a command line refused while its command runs (a `ValidationError` from `run()`:
    /// a file that cannot be read, an unknown `--type`) is said with that command's usage, as a refusal while parsing
    /// is, not with the root's `till <subcommand>`, which would send the user to the wrong help.
    static func main() async {
        var command: any ParsableCommand
        do {
            command = try await asyncParseAsRoot()
        } catch {
            exit(withError: error)
        }
        do {
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch let error as ValidationError {
            FileHandle.standardError.write(Data(refusal(error, of: type(of: command)).utf8))
            exit(withError: ExitCode.validationFailure)
        } catch {
            exit(withError: error)
        }
    }

    /// What a refused command line prints, in the parser's own words and layout: the message, the usage of the
    /// command that was run, and where its help is.
    static func refusal(_ error: ValidationError, of command: any ParsableCommand.Type) -> String {
        let usage = usageString(for: command)
        // The usage starts with the command's names (`till inspect jws`), then its options and arguments.
        let names = usage.split(separator: " ").prefix { !"[<-".contains($0.first ?? "-") }.joined(separator: " ")
        return "Error: \(error.message)\nUsage: \(usage)\n  See '\(names) --help' for more information.\n"
    }
}
