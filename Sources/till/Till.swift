import ArgumentParser
import TillCore

/// The `till` command: a thin layer over the libraries' build functions.
@main
struct Till: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "till",
        abstract: "Till: a self-hosted in-app purchase backend.",
        version: TillRelease.version,
        subcommands: [
            ServeCommand.self, ProbeCommand.self, SimulatorCommand.self, DemoCommand.self, ShopCommand.self,
            Inspect.self, Bench.self,
        ]
    )
}
