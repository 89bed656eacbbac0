import ArgumentParser
import Configuration
import Crypto
import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import SystemPackage
import TillAppStore
import TillCore
import TillDevelopment
import TillFormats
import TillHTTPKit
import TillServer
import TillSimulator
import TillStorage
import UnixSignals
import X509

/// `till serve`: the verification server. With no Apple set up it starts in development mode, with the App
/// Store simulator in the same process.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the verification server (development mode runs the App Store simulator too).",
        discussion:
            "Settings: flags, then TILL_… environment variables, then --config FILE (JSON), then defaults. See docs/configuration.md."
    )

    @Option(help: "development (with the in-process simulator) or production (Apple).") var mode: String?
    @Option(help: "The address to listen on.") var host: String?
    // `.unconditional`: `--port -5` is a port the settings refuse in words (`http.port is a whole number from 0 to
    // 65535, not -5`), not ArgumentParser's `Missing value`, which reads `-5` as an option.
    @Option(parsing: .unconditional, help: "The port to listen on.") var port: Int?
    @Option(help: "An SQLite file, :memory:, or postgres://user@host:port/database.") var databaseURL: String?
    @Option(help: "The admin API's bearer token.") var operatorToken: String?
    @Option(parsing: .unconditional, help: "The simulator's port (development mode).") var simulatorPort: Int?
    @Option(help: "trace, debug, info, notice, warning, error or critical.") var logLevel: String?
    @Option(help: "A JSON file of settings (keys as in docs/configuration.md).") var config: String?

    /// A setting the server cannot start with: its message, then exit 64 (EX_USAGE, as the argument parser's own
    /// refusals), without the parser's usage lines, which would say the command line was wrong.
    static func refuse(_ message: String) -> ExitCode {
        FileHandle.standardError.write(Data("Error: \(message)\n".utf8))
        return ExitCode(64)
    }

    /// What the banner says of sampling: swift-otel's `OTEL_TRACES_SAMPLER`, when set, decides over the ratio.
    static func sampling(_ tracing: TracingSettings) -> String {
        if let sampler = ProcessInfo.processInfo.environment["OTEL_TRACES_SAMPLER"], !sampler.isEmpty {
            return "sampled as OTEL_TRACES_SAMPLER=\(sampler) says"
        }
        return "\(tracing.sampleRatio) of new traces kept"
    }

    /// The two listeners `till serve` opens, for a bind error's message.
    enum Listener {
        case server, simulator

        var name: String { self == .server ? "the server" : "the simulator" }
        var setting: String {
            self == .server ? "http.host and http.port (--host, --port)" : "simulator.port (--simulator-port)"
        }
    }

    /// A listener that could not bind, said with its address and the setting that names it (NIO's error alone does not
    /// say which of the two listeners failed), then exit 1; any other error, or one after the listener started (an
    /// outbound connection's EADDRNOTAVAIL, say), as it is.
    static func explained(_ error: any Error, _ listener: Listener, host: String, port: Int, started: Bool)
        -> any Error
    {
        guard !started, let error = error as? IOError,
            error.errnoCode == EADDRINUSE || error.errnoCode == EADDRNOTAVAIL
        else { return error }
        let message =
            "Error: \(listener.name) cannot listen on \(host):\(port): \(error). Choose another with \(listener.setting); "
            + "port 0 takes a free one.\n"
        FileHandle.standardError.write(Data(message.utf8))
        return ExitCode(1)
    }

    func run() async throws {
        var flags: [AbsoluteConfigKey: ConfigValue] = [:]
        if let mode { flags["mode"] = .init(.string(mode), isSecret: false) }
        if let host { flags["http.host"] = .init(.string(host), isSecret: false) }
        if let port { flags["http.port"] = .init(.int(port), isSecret: false) }
        if let databaseURL { flags["database.url"] = .init(.string(databaseURL), isSecret: true) }
        if let operatorToken { flags["operator.token"] = .init(.string(operatorToken), isSecret: true) }
        if let simulatorPort { flags["simulator.port"] = .init(.int(simulatorPort), isSecret: false) }
        if let logLevel { flags["log.level"] = .init(.string(logLevel), isSecret: false) }
        let settings: ServerSettings
        do {
            settings = try await ServerSettings.load(flags: flags, file: config)
        } catch let error as SettingsRefusal {
            throw Self.refuse(error.message)
        }
        // With tracing on, each line logged in a span carries its trace_id and span_id.
        var logger =
            settings.tracing == nil
            ? Logger(label: "till") : Logger(label: "till", metadataProvider: ServerTracing.logMetadataProvider)
        logger.logLevel = settings.logLevel
        // A write past a file-size limit (RLIMIT_FSIZE) fails with EFBIG, which SQLite reports as an I/O error and the
        // server answers 503 storageUnavailable, instead of SIGXFSZ killing the process.
        signal(SIGXFSZ, SIG_IGN)
        var services: [any Service] = []
        var configuration = ServerConfiguration(
            database: settings.database,
            operatorToken: settings.operatorToken ?? PurchaseServerToken.make(),
            apple: settings.apple,
            confirmation: settings.confirmation,
            catchUp: settings.catchUp,
            serverSecret: Array(settings.serverSecret?.utf8 ?? "".utf8),
            contentDirectory: settings.contentDirectory,
            content: settings.content
        )
        configuration.webhooks = settings.webhooks
        configuration.imports = settings.imports
        configuration.databaseWait = settings.databaseWait
        configuration.tracing = settings.tracing
        do {
            configuration.snapshotSigningKey = try settings.snapshotPrivateKeyFile.map(SnapshotKeyFiles.signingKey)
            configuration.snapshotPublishedKeys = try settings.snapshotPublishedKeyFiles.map(
                SnapshotKeyFiles.publishedKey
            )
        } catch let error as SettingsRefusal {
            throw Self.refuse(error.message)
        }
        for path in settings.sandboxRootFiles {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw Self.refuse("cannot read \(path)")
            }
            configuration.trustForSandbox(try TrustAnchors.certificates(fromFile: Array(data)))
        }

        var simulator: Simulator?
        var simulatorPorts: Ports?
        var simulatorURL = ""
        if settings.development {
            var simulatorLogger = Logger(label: "till.simulator")
            simulatorLogger.logLevel = settings.logLevel
            let opened = try await Simulator.open(
                SimulatorConfiguration(database: settings.simulatorDatabase),
                logger: simulatorLogger
            )
            // Listening before the server opens: the server is configured with the simulator's URL, and port 0
            // (any free port) is known only once it listens.
            let listening: Ports
            do {
                listening = try await Ports.start(
                    {
                        buildSimulatorApplication(
                            opened,
                            host: "127.0.0.1",
                            port: settings.simulatorPort,
                            onServerRunning: $0
                        )
                    },
                    logger: simulatorLogger
                )
            } catch {
                try? await opened.shutdown()
                throw Self.explained(error, .simulator, host: "127.0.0.1", port: settings.simulatorPort, started: false)
            }
            simulator = opened
            simulatorPorts = listening
            simulatorURL = "http://127.0.0.1:\(listening.port)"
            configuration.apple = .simulator(simulatorURL)
            configuration.sandboxJWSRoots.append(opened.signer.jwsAuthority.root)
            configuration.sandboxReceiptRoots.append(opened.signer.receiptAuthority.root)
            configuration.sandboxReceiptIntermediates.append(opened.signer.receiptAuthority.intermediate)
        }
        let simulatorBase = simulatorURL
        let inProcessSimulator = simulator

        // Listening from the start: while the database opens and migrates, the front door answers /health and
        // says /ready is not (503 migrating); the server's routes answer once it is open.
        let frontDoor = ServerFrontDoor()
        let (ports, portReported) = AsyncStream.makeStream(of: Int.self)
        // Whether the server's listener started: a bind error is said as such only before it did.
        let listening = StartedFlag()
        let token = configuration.operatorToken
        let openedServer = OpenedServer()
        let preparedDemo = Mutex<DevelopmentSetup.Demo?>(nil)
        services.append(
            ServerRuntime(
                frontDoor: frontDoor,
                ports: ports,
                opened: openedServer,
                logger: logger,
                open: { [configuration, logger] in try await PurchaseServer.open(configuration, logger: logger) },
                prepare: { server in
                    let demo = try await inProcessSimulator.asyncMap {
                        try await DevelopmentSetup.prepare(server: server, simulator: $0)
                    }
                    preparedDemo.withLock { $0 = demo }
                },
                announce: { server, port in
                    let demo = preparedDemo.withLock { $0 }
                    let base = "http://\(settings.host):\(port)"
                    var notificationsWired = ""
                    if let demo, let simulator = inProcessSimulator {
                        // The simulator reaches the server over loopback, whatever address the server listens on.
                        let loopback =
                            ["0.0.0.0", "::", "localhost"].contains(settings.host) ? "127.0.0.1" : settings.host
                        do {
                            try await DevelopmentSetup.sendNotifications(
                                of: demo,
                                to: "http://\(loopback):\(port)",
                                simulator: simulator
                            )
                            notificationsWired =
                                "App Store Server Notifications (sandbox and production) → \(base)/v1/apple/notifications"
                        } catch {
                            notificationsWired = "App Store Server Notifications NOT wired: \(error)"
                        }
                    }
                    var banner = """
                        till serve (\(settings.development ? "development" : "production")) on \(base)
                          app API      \(base)/v1
                          admin API    \(base)/admin/v1   (Authorization: Bearer \(settings.operatorToken == nil ? token : "<operator token>"))
                          console      \(base)/console   (sign in with the operator token)
                          database     \(settings.database)
                        """
                    if let tracing = settings.tracing {
                        banner +=
                            "\n  traces       \(tracing.tracesURL)   (OTLP/HTTP, \(Self.sampling(tracing)))"
                    }
                    if let demo {
                        banner += """

                              simulator    \(simulatorBase)   (App Store stand-in; its sandbox roots are trusted for sandbox data only)
                              demo app     \(demo.bundleId), app key \(demo.appKey), sandbox device \(demo.deviceId)
                              \(notificationsWired)
                            try:
                              curl -s \(base)/v1/products -H 'Authorization: Bearer \(demo.appKey)'
                              JWS=$(curl -s -X POST \(simulatorBase)/storekit/sandbox/payments -d '{"deviceId":"\(demo.deviceId)","bundleId":"\(demo.bundleId)","productId":"pro"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["signedTransaction"])')
                              curl -s -X POST '\(base)/v1/receipts?wait=10' -H 'Authorization: Bearer \(demo.appKey)' -d "{\\"customerId\\":\\"alice\\",\\"signedTransaction\\":\\"$JWS\\"}"
                            """
                    }
                    say(banner)
                }
            )
        )
        // After the runtime: a group stops its services in reverse order, so the listener stops taking requests and
        // finishes those under way before the workers stop (a request waiting for Apple's answer still gets it).
        services.append(
            Application(
                responder: frontDoor,
                // A connection that sends nothing for `http.idle-timeout-seconds` is closed: a client that opens
                // connections and never finishes a request (slowloris) held them, and the file descriptors, for ever.
                // A request NIO's parser refuses is answered with the JSON every refusal has (MalformedRequestAnswer).
                server: .tillHTTP1(idleTimeout: TimeAmount(settings.idleTimeout)),
                configuration: .init(address: .hostname(settings.host, port: settings.port), serverName: "till"),
                onServerRunning: { channel in
                    listening.set()
                    portReported.yield(channel.localAddress?.port ?? settings.port)
                    portReported.finish()
                },
                logger: logger
            )
        )
        // After the listener, so that it hears of the stop before the listener and the workers: /ready says
        // draining for shutdown.drain-seconds while everything still serves.
        services.append(Drain(frontDoor: frontDoor, duration: settings.shutdownDrain, logger: logger))
        // Last, so that it hears of the stop first: past the grace, what is under way is cancelled; ten seconds
        // after that, the process exits whatever it is waiting for.
        services.append(ShutdownWatchdog(limit: settings.shutdownGrace + .seconds(10), logger: logger))
        // A service that fails (the runtime refusing a database, say) stops the others gracefully, as SIGTERM would,
        // rather than cancelling the listener mid-accept; the group then throws its error.
        var groupConfiguration = ServiceGroupConfiguration(
            services: services.map {
                .init(service: $0, failureTerminationBehavior: .gracefullyShutdownGroup)
            },
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        groupConfiguration.maximumGracefulShutdownDuration = settings.shutdownGrace
        let group = ServiceGroup(configuration: groupConfiguration)
        do {
            try await group.run()
        } catch {
            await simulatorPorts?.stop()
            try? await openedServer.server?.shutdown()
            try? await simulator?.shutdown()
            throw Self.explained(error, .server, host: settings.host, port: settings.port, started: listening.isSet)
        }
        await simulatorPorts?.stop()
        try await openedServer.server?.shutdown()
        try await simulator?.shutdown()
    }
}

extension Optional {
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}

/// Set once, read from any thread: whether a listener reported its port.
final class StartedFlag: Sendable {
    private let started = Atomic<Bool>(false)
    func set() { started.store(true, ordering: .relaxed) }
    var isSet: Bool { started.load(ordering: .relaxed) }
}
