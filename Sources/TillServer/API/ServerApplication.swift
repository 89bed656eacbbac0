import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import TillAppStore
import TillCatalogue
import TillHTTPKit
import TillLedger
import TillWebhooks

/// Builds the verification server's HTTP server, with its confirmation worker, the worker answering Apple's
/// consumption requests, the webhook worker delivering events, the figures' fold and, unless `catch-up.interval-seconds` is zero, its
/// catch-up with Apple at start and then periodically.
public func buildServerApplication(
    _ server: PurchaseServer,
    host: String = "127.0.0.1",
    port: Int = 8080,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    var application = Application(
        router: buildServerRouter(server),
        server: .tillHTTP1(),
        configuration: .init(address: .hostname(host, port: port), serverName: "till"),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) },
        logger: server.logger
    )
    application.addServices(serverWorkers(server))
    return application
}

/// What works beside the server's routes: confirmations, consumption answers, webhook deliveries, the figures, the
/// imports and, when it has an interval, the catch-up.
public func serverWorkers(_ server: PurchaseServer) -> [any Service] {
    var workers: [any Service] = [
        ConfirmationWorker(server: server),
        ConsumptionWorker(server: server),
        WebhookWorker(server: server),
        FiguresWorker(server: server),
        ImportWorker(server: server),
    ]
    if server.configuration.catchUp.interval > .zero { workers.append(CatchUpWorker(server: server)) }
    guard let tracing = server.tracing else { return workers }
    // The exporter first: a group stops its services in reverse order, so it sends what the workers ended last.
    return [tracing.exporter] + workers.map { TracedService(service: $0, tracer: tracing.tracer) }
}
