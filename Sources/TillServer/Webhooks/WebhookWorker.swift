import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TillHTTPKit

/// Delivers events to the apps' webhook endpoints in the background (`WebhookDeliveries`): woken when events are
/// recorded and when a delivery ends, it dispatches new events to each enabled endpoint, then claims what is due for
/// each, at most `concurrencyPerEndpoint` in flight to one endpoint (one while it keeps failing) and `concurrency` in
/// all, so a slow or dead receiver holds up only its own deliveries. A graceful shutdown lets the attempts under way
/// finish; the rest waits in the database for the next start (a claim of a process that stopped lapses).
public struct WebhookWorker: Service {
    let deliveries: WebhookDeliveries

    public init(server: PurchaseServer) {
        self.deliveries = server.webhookDeliveries
    }

    public func run() async throws {
        let settings = deliveries.settings
        let jobs = deliveries.jobs
        let store = deliveries.store
        let logger = deliveries.logger
        let client = WebhookClient(settings: settings)
        let inFlight = InFlightByEndpoint()
        let clock = ContinuousClock()
        var lastSweep = clock.now - .seconds(60)
        await withDiscardingTaskGroup { group in
            while !Task.isShuttingDownGracefully && !Task.isCancelled {
                let since = jobs.signal(.delivery).current
                do {
                    let endpoints = try await store.enabledWebhookEndpoints(on: store.sql)
                    if !endpoints.isEmpty {
                        let last = try await store.lastEventSequence(on: store.sql)
                        _ = try await deliveries.dispatch(endpoints, through: last)
                    }
                    if clock.now - lastSweep >= .seconds(60) {
                        lastSweep = clock.now
                        let expired = try await deliveries.deadLetterExpired()
                        if expired > 0 {
                            logger.warning("\(expired) webhook deliveries dead-lettered at their deadline")
                        }
                    }
                    for endpoint in endpoints {
                        let running = inFlight.total
                        let mine = inFlight.count(endpoint.id)
                        let cap =
                            endpoint.consecutiveFailures >= settings.failuresBeforeProbing
                            ? 1 : settings.concurrencyPerEndpoint
                        let room = min(cap - mine, settings.concurrency - running)
                        guard room > 0 else { continue }
                        for attempt in try await deliveries.claim(endpoint: endpoint, limit: room) {
                            inFlight.add(1, to: endpoint.id)
                            group.addTask {
                                await deliveries.perform(attempt, client: client)
                                inFlight.add(-1, to: endpoint.id)
                                jobs.wake(.delivery)
                            }
                        }
                    }
                } catch {
                    logger.error("webhook deliveries: \(error)")
                }
                if inFlight.total > 0 {
                    // Attempts under way: let a few end before claiming again, so claims come in batches.
                    try? await Task.sleep(for: .milliseconds(2))
                }
                // Until a signal (an event recorded, an attempt ended), the next due delivery, or a second at most (another
                // process may have recorded events); never a spin while due deliveries wait for room.
                let now = deliveries.clock.milliseconds
                let next = (try? await jobs.nextDue(.delivery)).map { Duration.milliseconds(max(0, $0 - now)) }
                let timeout = max(.milliseconds(50), min(.seconds(1), next ?? .seconds(1)))
                _ = try? await cancelWhenGracefulShutdown {
                    await jobs.signal(.delivery).wait(since: since, timeout: timeout)
                }
            }
        }
        await client.shutdown()
    }
}

/// Attempts under way, per endpoint: shared by the worker's loop and the tasks it starts.
final class InFlightByEndpoint: Sendable {
    private let counts = Mutex<[String: Int]>([:])
    var total: Int { counts.withLock { $0.values.reduce(0, +) } }
    func count(_ endpoint: String) -> Int { counts.withLock { $0[endpoint] ?? 0 } }
    func add(_ delta: Int, to endpoint: String) { counts.withLock { $0[endpoint, default: 0] += delta } }
}
