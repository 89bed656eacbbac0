import Foundation
import Logging
import ServiceLifecycle
import Testing
import TillContract
import TillDevelopment
import TillHTTPKit
import TillTestSupport

@testable import TillServer

/// What keeps the webhook worker's cost per event low (docs/events.md, "How it works"; docs/benchmarks.md): events wake
/// it only while an endpoint is enabled.
@Suite(.sharingTheMachine)
struct WebhookWorkerTests {
    static func credit(_ fixture: ServerFixture, _ request: String) async throws {
        _ = try await fixture.server.ledger.adjustBalance(
            bundleId: ServerFixture.bundleId,
            customerId: "alice",
            credit: "gems",
            delta: 1,
            requestId: request,
            note: "test"
        )
    }

    @Test(arguments: TestDatabase.all) func eventsWakeTheWorkerOnlyWhileAnEndpointIsEnabled(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database, configure: WebhookTests.loopback) { fixture in
            let receiver = WebhookReceiver()
            try await withServices({ receiver.application(onServerRunning: $0) }) { port in
                try await withServices({ _ in
                    ServiceGroup(
                        configuration: .init(
                            services: [WebhookWorker(server: fixture.server)],
                            gracefulShutdownSignals: [],
                            logger: .init(label: "test")
                        )
                    )
                }) { _ in
                    let committed = fixture.server.events.committed
                    let wakeups = fixture.server.jobs.signal(.delivery)
                    // No endpoint: once the worker has looked, events leave it asleep.
                    try await waitUntil { !committed.isWatched }
                    let asleep = wakeups.current
                    for request in 1...3 { try await Self.credit(fixture, "quiet-\(request)") }
                    #expect(wakeups.current == asleep, "three events with no endpoint woke the worker")

                    // An endpoint: the worker reads it at once, and from then on each event wakes it.
                    let created = try await fixture.server.webhookEndpoints.create(
                        bundleId: ServerFixture.bundleId,
                        .init(url: "http://127.0.0.1:\(port)/till/events")
                    )
                    receiver.secret = created.secret
                    try await waitUntil { committed.isWatched }
                    let before = wakeups.current
                    try await Self.credit(fixture, "heard")
                    #expect(wakeups.current > before)
                    try await waitUntil { try WebhookTests.received(receiver).count == 1 }
                    #expect(try WebhookTests.received(receiver).map(\._type) == [.credits_adjusted])
                }
            }
        }
    }
}
