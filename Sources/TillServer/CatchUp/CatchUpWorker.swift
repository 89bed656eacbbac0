import ServiceLifecycle
import TillContract

/// Catches up every app that has an App Store Server API key when the server starts, then every
/// `catch-up.interval-seconds` (docs/configuration.md). With an interval of zero it does nothing, and only the admin
/// API runs a catch-up. A graceful shutdown ends the wait between runs at once; the app being caught up is finished
/// first, the others wait for the next start.
public struct CatchUpWorker: Service {
    let catchUp: CatchUp

    public init(server: PurchaseServer) {
        self.catchUp = server.catchUp
    }

    public func run() async throws {
        let interval = catchUp.configuration.catchUp.interval
        guard interval > .zero else {
            try? await gracefulShutdown()
            return
        }
        var trigger = CatchUpRun.TriggerPayload.start
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            await catchUp.runAll(trigger: trigger)
            trigger = .interval
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }
}
