import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// Builds the verification server's HTTP server, with its confirmation worker, the worker answering Apple's
/// consumption requests, the webhook worker delivering events and, unless `catch-up.interval-seconds` is zero, its
/// catch-up with Apple at start and then periodically.
public func buildServerApplication(
    _ server: PurchaseServer,
    host: String = "127.0.0.1",
    port: Int = 8080,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    var application = Application(
        router: buildServerRouter(server),
        configuration: .init(address: .hostname(host, port: port), serverName: "till"),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) },
        logger: server.logger
    )
    application.addServices(
        ConfirmationWorker(server: server),
        ConsumptionWorker(server: server),
        WebhookWorker(server: server)
    )
    if server.configuration.catchUp.interval > .zero { application.addServices(CatchUpWorker(server: server)) }
    return application
}
