import ArgumentParser
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
}
