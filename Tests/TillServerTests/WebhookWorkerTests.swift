import Foundation
import Logging
import NIOCore
import NIOEmbedded
import ServiceLifecycle
import Testing
import TillContract
import TillDevelopment
import TillHTTPKit
import TillTestSupport

@testable import TillServer

/// What keeps the webhook worker's cost per event low (docs/events.md, "How it works"; docs/benchmarks.md): events wake
/// it only while an endpoint is enabled, under a steady stream of events its rounds take batches, and a request leaves
/// in one write.
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

    @Test func aRoundUnderASteadyStreamWaitsForTheWindowAndOneBehindDoesNot() {
        let start = ContinuousClock().now
        let now: Int64 = 1_800_000_000_000
        var pacing = RoundPacing(lastRound: start - .seconds(60))
        #expect(pacing.nextRound < start, "the first event after a quiet time is not held back")

        // Fresh deliveries, fewer than the room: the next round waits for the window, taking what comes meanwhile.
        pacing.ran(at: start, claimed: [("ep", now - 3), ("ep", now)], limits: [("ep", 8)], now: now)
        #expect(pacing.nextRound == start + pacing.window)

        // As many as the room: a backlog, the next round soon.
        pacing.ran(at: start, claimed: Array(repeating: ("ep", now), count: 8), limits: [("ep", 8)], now: now)
        #expect(pacing.nextRound == start + pacing.catchingUp)

        // Fewer, but one had waited longer than the window (a customer's next event behind the one before it).
        pacing.ran(at: start, claimed: [("ep", now - 500)], limits: [("ep", 8)], now: now)
        #expect(pacing.nextRound == start + pacing.catchingUp)

        // Nothing claimed, room left: back to the window.
        pacing.ran(at: start, claimed: [], limits: [("ep", 8), ("other", 8)], now: now)
        #expect(pacing.nextRound == start + pacing.window)
        #expect(pacing.catchingUp < pacing.window)
    }

    @Test func aRequestsHeadAndBodyLeaveInOneWrite() throws {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(FlushCoalescer(), position: .first)
        // What AsyncHTTPClient does: the head written and flushed, then the body written and flushed.
        channel.write(ByteBuffer(string: "POST /till/events HTTP/1.1\r\ncontent-length: 2\r\n\r\n"), promise: nil)
        channel.flush()
        channel.write(ByteBuffer(string: "{}"), promise: nil)
        channel.flush()
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil, "the head left on its own")
        channel.embeddedEventLoop.run()
        let head = try #require(try channel.readOutbound(as: ByteBuffer.self))
        let body = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(String(buffer: head).hasPrefix("POST") && String(buffer: body) == "{}")
        #expect(try channel.finish().isClean)
    }
}
