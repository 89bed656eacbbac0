import Logging
import TillDevelopment
import TillServer

/// The verification server's HTTP listener and confirmation worker, which the demo stops and starts again on the
/// same port, as an operator restarting the server would.
actor ServerListener {
    let server: PurchaseServer
    let logger: Logger
    private var port = 0
    private var running: Ports?

    init(server: PurchaseServer, logger: Logger) {
        self.server = server
        self.logger = logger
    }

    /// Starts listening (on a free port the first time, then on the same one) and answers the port.
    @discardableResult
    func start() async throws -> Int {
        if let running { return running.port }
        let server = server
        let port = port
        let started = try await Ports.start(
            { buildServerApplication(server, host: "127.0.0.1", port: port, onServerRunning: $0) },
            logger: logger
        )
        running = started
        self.port = started.port
        return started.port
    }

    func stop() async {
        await running?.stop()
        running = nil
    }
}
