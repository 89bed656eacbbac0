import ArgumentParser
import Foundation
import Logging
import TillDevelopment

/// `till demo`: the whole system in one process — the App Store simulator, the verification server and an app on
/// TillClient, on loopback ports — walked through the story of an app's purchases, step by step.
public struct DemoCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Walk through the whole system in one process: store, server and app, on loopback ports.",
        discussion: """
            Prints each step and a ✓ or ✗ per expectation; exits with status 1 if any step did not behave as \
            expected. Takes well under two minutes; everything it writes goes to a temporary directory, removed at \
            the end. See docs/demo.md.
            """
    )

    @Option(help: "The simulator's and the server's log level (their logs go to standard error).")
    var logLevel: String = "critical"

    public init() {}

    public func run() async throws {
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw ValidationError("--log-level is trace, debug, info, notice, warning, error or critical")
        }
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        let clock = ContinuousClock()
        let started = clock.now
        let report = DemoReport()
        try await DemoWorld.run(logLevel: level) { world in
            say(
                """
                till demo: the App Store simulator on \(world.simulatorURL), till serve on \(world.serverURL), \
                and the app (TillClient) for customer \(DemoWorld.customer), in this process; \
                files in \(world.directory.path) until the end.
                """
            )
            let walkthrough = try DemoWalkthrough(world: world, report: report)
            await walkthrough.run()
        }
        guard report.finish(elapsed: clock.now - started) else { throw ExitCode(1) }
    }
}
