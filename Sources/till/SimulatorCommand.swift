import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import TillCore
import TillDevelopment
import TillSimulator
import TillStorage
import UnixSignals

/// `till simulator`: the App Store stand-in on a local port.
struct SimulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulator",
        abstract:
            "Run the App Store simulator: StoreKit for apps, verifyReceipt, the App Store Server API and notifications.",
        discussion: "Endpoints and examples: docs/simulator.md."
    )

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on (0 picks a free one).")
    var port = 8090

    @Option(help: "An SQLite file, :memory:, or postgres://user@host:port/database.")
    var database = "till-simulator.sqlite"

    @Option(
        help: ArgumentHelp(
            "How fast sandbox subscriptions renew: \(RenewalRate.presets.keys.sorted().joined(separator: ", ")). "
                + "Given, it wins over the rate the database kept; else that one, or monthly-every-5-minutes."
        )
    )
    var renewalRate: String?

    @Option(
        name: .customLong("fault"),
        help:
            "A fault to inject from the start, ENVIRONMENT:ENDPOINT:EFFECT (repeatable), e.g. sandbox:verifyReceipt:latency=3-6."
    )
    var faults: [String] = []

    @Option(
        help:
            "Retry refused sandbox notifications after these delays in seconds of simulated time, e.g. 10,60,300 (Apple's sandbox sends once; production always retries at 1, 12, 24, 48 and 72 h)."
    )
    var sandboxNotificationRetries: String?

    @Option(help: "Require this bearer token on the admin API.")
    var adminToken: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel = "info"

    func run() async throws {
        let rate = try renewalRate.map { name in
            guard let rate = RenewalRate(name: name) else { throw ValidationError("unknown renewal rate \(name)") }
            return rate
        }
        var logger = Logger(label: "till.simulator")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        let faultRules = try faults.map { try FaultRule(parsing: $0) }
        var sandboxRetryDelays: [Double] = []
        if let sandboxNotificationRetries {
            let delays = sandboxNotificationRetries.split(separator: ",").map {
                Double($0.trimmingCharacters(in: .whitespaces))
            }
            guard !delays.isEmpty, delays.allSatisfy({ ($0 ?? -1) > 0 }) else {
                throw ValidationError("--sandbox-notification-retries takes positive seconds, e.g. 10,60,300")
            }
            sandboxRetryDelays = delays.compactMap { $0 }
        }
        let configuration = SimulatorConfiguration(
            database: try DatabaseConfiguration(parsing: database),
            renewalRate: rate,
            notificationRetryDelays: [
                .production: SimulatorConfiguration.productionNotificationRetryDelays, .sandbox: sandboxRetryDelays,
            ],
            faults: faultRules,
            adminToken: adminToken
        )
        let simulator = try await Simulator.open(configuration, logger: logger)
        // With an admin token, the banner's example sends it (without, the admin API answers it 401).
        let authorization = adminToken.map { " -H 'Authorization: Bearer \($0)'" } ?? ""
        let app = buildSimulatorApplication(simulator, host: host, port: port) { port in
            say(
                """
                till simulator listening on http://\(host):\(port)
                  admin API       http://\(host):\(port)/admin/v1
                  StoreKit        http://\(host):\(port)/storekit/{sandbox|production}
                  verifyReceipt   http://\(host):\(port)/{sandbox|production}/verifyReceipt
                  Server API      http://\(host):\(port)/{sandbox|production}/inApps/v1/…
                  JWS root        http://\(host):\(port)/admin/v1/certificates/jws-root.pem
                  database        \(configuration.database)
                try: curl -s -X POST http://\(host):\(port)/admin/v1/apps\(authorization) -d '{"bundleId":"com.example.app"}'
                """
            )
        }
        let services = ServiceGroup(
            configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        )
        try await services.run()
        try await simulator.shutdown()
    }
}
