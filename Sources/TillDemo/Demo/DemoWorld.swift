import Foundation
import Logging
import NIOHTTP1
import TillAppStore
import TillClient
import TillContract
import TillCore
import TillDevelopment
import TillFormats
import TillServer
import TillSimulator
import TillStorage
import TillWebhooks

/// What `till demo` runs in one process: the App Store simulator and the verification server on loopback ports,
/// the development app `till serve` makes (``DevelopmentSetup``), and the app's files in a temporary directory
/// that is removed at the end.
struct DemoWorld: Sendable {
    typealias App = PurchaseCoordinator<SimulatorStorefront>

    let simulator: Simulator
    let server: PurchaseServer
    let listener: ServerListener
    let app: DevelopmentSetup.Demo
    let simulatorURL: String
    let serverURL: String
    let operatorToken: String
    let directory: URL
    /// The app's own backend, as far as events go: it receives them as webhooks and checks each signature.
    let backend: WebhookReceiver

    /// The customer id the app signs in with.
    static let customer = "alice"

    /// Starts everything, runs `body`, then stops everything and removes the temporary directory.
    static func run<T>(logLevel: Logger.Level, _ body: (DemoWorld) async throws -> T) async throws -> T {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("till-demo-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var logger = Logger(label: "till.demo")
        logger.logLevel = logLevel

        let simulator = try await Simulator.open(SimulatorConfiguration(), logger: logger)
        let simulatorPorts: Ports
        do {
            simulatorPorts = try await Ports.start(
                { buildSimulatorApplication(simulator, host: "127.0.0.1", port: 0, onServerRunning: $0) },
                logger: logger
            )
        } catch {
            try? await simulator.shutdown()
            throw error
        }
        let simulatorURL = "http://127.0.0.1:\(simulatorPorts.port)"
        let operatorToken = PurchaseServerToken.make()
        let clock = simulator.clock
        let server: PurchaseServer
        do {
            server = try await PurchaseServer.open(
                ServerConfiguration(
                    operatorToken: operatorToken,
                    apple: .simulator(simulatorURL),
                    sandboxJWSRoots: [simulator.signer.jwsAuthority.root],
                    sandboxReceiptRoots: [simulator.signer.receiptAuthority.root],
                    sandboxReceiptIntermediates: [simulator.signer.receiptAuthority.intermediate],
                    confirmation: ConfirmationSettings(
                        requestTimeout: .seconds(10),
                        backoffBase: .milliseconds(250),
                        backoffCap: .seconds(1)
                    ),
                    contentDirectory: directory.appendingPathComponent("server-content").path,
                    // The backend listens on loopback over plain HTTP, as in development mode.
                    webhooks: WebhookSettings(allowHTTPToLoopback: true, schedule: [.milliseconds(200), .seconds(1)])
                ),
                logger: logger,
                // The server follows the simulator's clock: subscription periods end for both when the simulated
                // App Store says, also after the demo moves its clock forward.
                now: { clock.now() }
            )
        } catch {
            await simulatorPorts.stop()
            try? await simulator.shutdown()
            throw error
        }
        let listener = ServerListener(server: server, logger: logger)
        let backend = WebhookReceiver()
        let backendPorts: Ports
        do {
            backendPorts = try await Ports.start(
                { backend.application(logger: logger, onServerRunning: $0) },
                logger: logger
            )
        } catch {
            try? await server.shutdown()
            await simulatorPorts.stop()
            try? await simulator.shutdown()
            throw error
        }
        let result: Result<T, any Error>
        do {
            let app = try await DevelopmentSetup.prepare(server: server, simulator: simulator)
            let port = try await listener.start()
            let serverURL = "http://127.0.0.1:\(port)"
            // Apple's notifications (renewals, refunds) go to the server, as set in App Store Connect.
            try await DevelopmentSetup.sendNotifications(of: app, to: serverURL, simulator: simulator)
            // The app's backend takes every event of the app, signed (Standard Webhooks): an endpoint added through
            // the admin API, as an operator adds one.
            let created = try await AdminHTTP(baseURL: serverURL, token: operatorToken).send(
                .POST,
                "/admin/v1/apps/\(app.bundleId)/webhooks",
                body: Array(#"{"url":"http://127.0.0.1:\#(backendPorts.port)/till/events"}"#.utf8)
            )
            backend.secret = try JSONDecoder().decode(
                Components.Schemas.WebhookEndpointWithSecret.self,
                from: Data(created.body)
            ).secret
            let world = DemoWorld(
                simulator: simulator,
                server: server,
                listener: listener,
                app: app,
                simulatorURL: simulatorURL,
                serverURL: serverURL,
                operatorToken: operatorToken,
                directory: directory,
                backend: backend
            )
            result = .success(try await body(world))
        } catch {
            result = .failure(error)
        }
        await listener.stop()
        await backendPorts.stop()
        await simulatorPorts.stop()
        try? await server.shutdown()
        try? await simulator.shutdown()
        return try result.get()
    }

    /// The app on a device, keeping its outbox, snapshot and files in `folder` of the temporary directory: the same
    /// folder is the same installation across launches.
    func app(
        deviceId: String,
        folder: String,
        evidence: App.Evidence = .signedTransaction
    ) throws -> App {
        let server = TillServerClient(baseURL: serverURL, appKey: app.appKey, timeout: 10)
        return try PurchaseCoordinator(
            storefront: SimulatorStorefront(
                baseURL: simulatorURL,
                deviceId: deviceId,
                bundleId: app.bundleId,
                timeout: 10,
                pollInterval: 0.2
            ),
            server: server,
            bundleId: app.bundleId,
            customerId: Self.customer,
            directory: directory.appendingPathComponent(folder, isDirectory: true),
            backoff: Backoff(base: 0.2, cap: 1, jitter: 0),
            evidence: evidence
        )
    }

    /// The server's app API as the app calls it.
    var client: TillServerClient { TillServerClient(baseURL: serverURL, appKey: app.appKey, timeout: 10) }

    /// The server's admin API, with the operator token.
    var serverAdmin: AdminHTTP { AdminHTTP(baseURL: serverURL, token: operatorToken) }
}
