import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import TillHTTPKit

/// Builds the simulator's HTTP server, with its notification delivery and renewal services.
///
/// - Parameter onServerRunning: called with the bound port once listening (tests use port 0).
public func buildSimulatorApplication(
    _ simulator: Simulator,
    host: String = "127.0.0.1",
    port: Int = 8090,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    let router = buildSimulatorRouter(simulator)
    let faults = simulator.faults
    var application = Application(
        router: router,
        server: .http1(configuration: .init(additionalChannelHandlers: [ConnectionResetHandler(faults: faults)])),
        configuration: .init(address: .hostname(host, port: port), serverName: "till-simulator"),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) },
        logger: simulator.logger
    )
    application.addServices(
        NotificationDeliveryService(simulator: simulator),
        SubscriptionRenewalService(simulator: simulator)
    )
    return application
}
