import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TillServer

/// The server behind `till serve`'s front door: opens the database (migrating it) while the front door already
/// listens, hands the server to it, announces it once the port is known, then runs the workers until the stop.
struct ServerRuntime: Service {
    let frontDoor: ServerFrontDoor
    /// The listener's port, once it listens.
    let ports: AsyncStream<Int>
    /// Where the opened server is kept for the command to shut down after every service has stopped.
    let opened: OpenedServer
    let logger: Logger
    let open: @Sendable () async throws -> PurchaseServer
    /// What is set up before the workers start (in development, the demo app, so that the catch-up's run at start
    /// includes it).
    let prepare: @Sendable (PurchaseServer) async throws -> Void
    /// The banner (and, in development, the simulator's notifications wired), once the port is known.
    let announce: @Sendable (PurchaseServer, Int) async throws -> Void

    func run() async throws {
        let server = try await open()
        opened.server = server
        try await prepare(server)
        frontDoor.open(server)
        let workers = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: serverWorkers(server), logger: logger)
        )
        // The workers start with the routes, as they always have; the banner waits for the port.
        let ports = self.ports
        let announce = self.announce
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await workers.run() }
            group.addTask {
                // No port: the listener failed to start (its error stops the group, which ends this wait).
                let port = try? await cancelWhenGracefulShutdown {
                    var listening = ports.makeAsyncIterator()
                    return await listening.next()
                }
                guard let port = port ?? nil else { return }
                try await announce(server, port)
            }
        }
    }
}

/// The server once `ServerRuntime` has opened it.
final class OpenedServer: Sendable {
    private let stored = Mutex<PurchaseServer?>(nil)

    var server: PurchaseServer? {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}

/// After SIGTERM, keeps everything serving for `duration` while `/ready` answers `503 draining`, so that a load
/// balancer takes the process out before its listener closes. It hears of the stop before the listener and the
/// workers (it comes after them in the group), and the stop goes on when it returns.
struct Drain: Service {
    let frontDoor: ServerFrontDoor
    let duration: Duration
    let logger: Logger

    func run() async throws {
        // Returns when the group starts its graceful shutdown (or is cancelled).
        try? await gracefulShutdown()
        frontDoor.drain()
        // A server that never opened (its database refused, say) has no traffic to hand over.
        guard duration > .zero, frontDoor.isOpen else { return }
        logger.notice("draining: /ready answers 503 for \(duration) while every route still serves")
        try? await Task.sleep(for: duration)
    }
}
