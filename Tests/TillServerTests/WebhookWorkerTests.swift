import Foundation
import Logging
import NIOCore
import NIOEmbedded
import SQLKit
import ServiceLifecycle
import Testing
import TillAppStore
import TillContract
import TillDevelopment
import TillHTTPKit
import TillJobs
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillServer
@testable import TillWebhooks

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

    /// Runs `body` with the fixture's webhook worker running (and nothing else).
    static func withWorker(_ fixture: ServerFixture, _ body: () async throws -> Void) async throws {
        try await withServices({ _ in
            ServiceGroup(
                configuration: .init(
                    services: [WebhookWorker(server: fixture.server)],
                    gracefulShutdownSignals: [],
                    logger: .init(label: "test")
                )
            )
        }) { _ in try await body() }
    }

    /// Runs `body` with `receiver` listening and an endpoint of the fixture's app pointing at it, created before any
    /// worker runs (the test starts the worker when it wants).
    static func withEndpoint(
        _ fixture: ServerFixture,
        _ receiver: WebhookReceiver,
        _ body: (Components.Schemas.WebhookEndpointWithSecret) async throws -> Void
    ) async throws {
        try await withServices({ receiver.application(onServerRunning: $0) }) { port in
            let created = try await fixture.server.webhookEndpoints.create(
                bundleId: ServerFixture.bundleId,
                .init(url: "http://127.0.0.1:\(port)/till/events")
            )
            receiver.secret = created.secret
            try await body(created)
        }
    }

    @Test(arguments: TestDatabase.all) func eventsWakeTheWorkerOnlyWhileAnEndpointIsEnabled(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database, configure: WebhookTests.loopback) { fixture in
            let receiver = WebhookReceiver()
            try await withServices({ receiver.application(onServerRunning: $0) }) { port in
                try await Self.withWorker(fixture) {
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

    /// A healthy endpoint's newest events are sent as they are dispatched (`WebhookDeliveries.sendAtDispatch`): a
    /// delivered event writes one row, its delivery, delivered, and no job. A first attempt that fails is written as a
    /// delivery with its job, and its customer's next event waits for it in the queue.
    @Test(arguments: TestDatabase.all) func aHealthyEndpointsEventsAreSentAtDispatchWithoutJobs(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database, configure: WebhookTests.loopback) { fixture in
            try await WebhookTests.withWebhooks(fixture) { receiver, endpoint in
                func count(_ state: WebhookDeliveryState?) async throws -> Int {
                    try await fixture.server.webhookHistory.deliveries(
                        bundleId: ServerFixture.bundleId,
                        endpointId: endpoint.endpoint.id,
                        state: state
                    ).total
                }
                let (_, statements) = try await fixture.server.database.statements.recording {
                    for customer in ["ann", "ben", "cat"] {
                        _ = try await fixture.server.ledger.adjustBalance(
                            bundleId: ServerFixture.bundleId,
                            customerId: customer,
                            credit: "gems",
                            delta: 1,
                            requestId: "first",
                            note: "test"
                        )
                    }
                    try await waitUntil { try await count(.delivered) == 3 }
                }
                // (Each round still asks the queue for due deliveries: an UPDATE that finds none.)
                // (Record statements quote their table's name.)
                let sql = statements.map { $0.sql.replacingOccurrences(of: "\"", with: "") }
                let jobInserts = sql.filter { $0.contains("INSERT INTO srv_jobs") }
                #expect(jobInserts.isEmpty, "\(jobInserts)")
                #expect(sql.contains { $0.contains("INSERT INTO srv_webhook_deliveries") })
                #expect(!sql.contains { $0.contains("UPDATE srv_webhook_deliveries SET state = 'delivered'") })
                #expect(try WebhookTests.received(receiver).count == 3)
                #expect(receiver.count == 3, "each event sent once")

                // A first attempt refused: its delivery and job are written; the customer's next event waits for it.
                receiver.behaviour = .fail(status: 503)
                try await Self.credit(fixture, "refused")
                try await waitUntil { try await count(.pending) == 1 }
                let queued = try await fixture.server.database.sql.raw(
                    "SELECT COUNT(*) AS n FROM srv_jobs WHERE kind = 'delivery' AND state = 'queued'"
                ).first()?.decode(column: "n", as: Int.self)
                #expect(queued == 1)
                receiver.behaviour = .accept
                try await Self.credit(fixture, "after")
                try await waitUntil { try await count(.delivered) == 5 }
                let alice = try WebhookTests.received(receiver).filter { $0.customer?.id == "alice" }.map(\.sequence)
                #expect(alice.count == 2 && alice == alice.sorted(), "\(alice)")
            }
        }
    }

    /// One worker at a time sends an endpoint's events at dispatch (its dispatcher, the job queue's holder of the
    /// endpoint's group): another neither sends nor dispatches them while that hold lasts; once it is given up, the
    /// next dispatches at once, and a cursor's move from where the cursor no longer is writes nothing.
    @Test(arguments: TestDatabase.all) func anEndpointHasOneDispatcherAtATime(_ database: TestDatabase) async throws {
        try await ServerFixture.run(database: database, configure: WebhookTests.loopback) { fixture in
            let server = fixture.server
            let store = WebhookStore(database: server.database)
            let created = try await server.webhookEndpoints.create(
                bundleId: ServerFixture.bundleId,
                .init(url: "http://127.0.0.1:9/till/events")
            )
            let id = created.endpoint.id
            try await Self.credit(fixture, "one")
            func endpoint() async throws -> WebhookEndpointRecord {
                try #require(try await store.webhookEndpoint(id: id, on: store.sql))
            }
            let t = server.webhookDeliveries.clock.milliseconds
            let until = t + 600_000
            let held = try await server.database.transaction { db in
                try await server.jobs.hold(.delivery, group: id, for: "wkr_a", until: until, on: db)
            }
            #expect(held)
            // Another worker's dispatch skips the endpoint meanwhile: no delivery made, the cursor where it was.
            let before = try await endpoint()
            #expect(try await server.webhookDeliveries.dispatch(endpointId: id, worker: "wkr_b") == nil)
            #expect(try await endpoint().dispatchedThrough == before.dispatchedThrough)
            // Nor does it become the endpoint's dispatcher to send at dispatch.
            #expect(
                try await server.webhookDeliveries.holdDispatcher(endpointId: id, worker: "wkr_b", until: nil) == nil
            )
            // Its holder's dispatch goes ahead.
            #expect(
                try await server.webhookDeliveries.holdDispatcher(endpointId: id, worker: "wkr_a", until: nil) != nil
            )
            // A worker that stops gives it up: the next one dispatches at once.
            try await server.jobs.releaseHolds(.delivery, of: "wkr_a")
            #expect(try await server.webhookDeliveries.dispatch(endpointId: id, worker: "wkr_c") != nil)
            let after = try await endpoint().dispatchedThrough
            #expect(after > before.dispatchedThrough)
            // A batch sent at dispatch from the old cursor (a worker whose hold lapsed meanwhile) records nothing.
            let moved = try await server.database.transaction { db in
                try await store.moveCursor(
                    endpointId: id,
                    from: before.dispatchedThrough,
                    to: after + 1,
                    at: t + 1,
                    on: db
                )
            }
            #expect(!moved)
            #expect(try await endpoint().dispatchedThrough == after)
        }
    }

    /// A worker leaves an endpoint that another worker dispatches to it, events and all, until that worker gives it
    /// up; then it sends them.
    @Test(arguments: TestDatabase.all) func aWorkerLeavesAnotherWorkersEndpointAlone(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database, configure: WebhookTests.loopback) { fixture in
            let receiver = WebhookReceiver()
            try await Self.withEndpoint(fixture, receiver) { created in
                let now = fixture.server.webhookDeliveries.clock.milliseconds
                let taken = try await fixture.server.database.transaction { db in
                    try await fixture.server.jobs.hold(
                        .delivery,
                        group: created.endpoint.id,
                        for: "wkr_other",
                        until: now + 600_000,
                        on: db
                    )
                }
                #expect(taken)
                try await Self.withWorker(fixture) {
                    try await Self.credit(fixture, "held")
                    try await Task.sleep(for: .milliseconds(1500))
                    #expect(receiver.count == 0, "sent while another worker dispatched the endpoint")
                    try await fixture.server.jobs.releaseHolds(.delivery, of: "wkr_other")
                    try await waitUntil { try WebhookTests.received(receiver).count == 1 }
                }
            }
        }
    }

    /// A batch sent at dispatch stops before a customer's second event, and says that more events wait (so that the
    /// worker's next round comes at the catching-up pace: a backlog of a few customers goes out at the receiver's pace).
    @Test(arguments: TestDatabase.all) func aBatchSentAtDispatchStopsAtACustomersSecondEvent(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database, configure: WebhookTests.loopback) { fixture in
            let created = try await fixture.server.webhookEndpoints.create(
                bundleId: ServerFixture.bundleId,
                .init(url: "http://127.0.0.1:9/till/events")
            )
            for request in ["one", "two", "three"] { try await Self.credit(fixture, request) }
            let endpoint = try #require(
                try await WebhookStore(database: fixture.server.database).webhookEndpoint(
                    id: created.endpoint.id,
                    on: fixture.server.database.sql
                )
            )
            let (batch, _) = try #require(
                try await fixture.server.webhookDeliveries.sendAtDispatch(
                    endpoint: endpoint,
                    room: 8,
                    worker: "wkr_test",
                    heldUntil: nil
                )
            )
            #expect(batch.attempts.map(\.delivery.customerId) == ["alice"])
            #expect(batch.through == batch.attempts[0].delivery.eventSequence)
            #expect(batch.more)
        }
    }

    /// A worker that stops gracefully gives up the endpoints it dispatched.
    @Test(arguments: TestDatabase.all) func aWorkerThatStopsGivesUpItsEndpoints(_ database: TestDatabase) async throws {
        try await ServerFixture.run(database: database, configure: WebhookTests.loopback) { fixture in
            var id = ""
            try await WebhookTests.withWebhooks(fixture) { receiver, endpoint in
                id = endpoint.endpoint.id
                try await Self.credit(fixture, "one")
                try await waitUntil { try WebhookTests.received(receiver).count == 1 }
                try await waitUntil {
                    try await fixture.server.jobs.holds(.delivery, on: fixture.server.database.sql)[id] != nil
                }
            }
            #expect(try await fixture.server.jobs.holds(.delivery, on: fixture.server.database.sql)[id] == nil)
        }
    }

    /// Deliveries are inserted and read for an attempt through hand-written columns (`WebhookDeliveryRecord.columns`,
    /// `init(row:)`), and dispatches read events by hand: what they write, Codable reads back the same, and what they
    /// read is what Codable wrote.
    @Test(arguments: TestDatabase.all) func handWrittenRowsMatchCodables(_ database: TestDatabase) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let store = WebhookStore(database: fixture.server.database)
            try await Self.credit(fixture, "one")
            let event = try #require(
                try await store.eventStore.eventsToDispatch(
                    after: 0,
                    limit: 10,
                    bundleId: ServerFixture.bundleId,
                    on: store.sql
                )
                .last
            )
            let stored = try #require(
                try await store.eventStore.event(bundleId: ServerFixture.bundleId, id: event.id, on: store.sql)
            )
            #expect(
                (event.sequence, event.id, event.type, event.customerId)
                    == (stored.sequence, stored.id, stored.type, stored.customerId)
            )
            let full = WebhookDeliveryRecord(
                id: "dlv_full",
                endpointId: "ep_1",
                bundleId: ServerFixture.bundleId,
                eventSequence: event.sequence,
                eventId: event.id,
                eventType: event.type,
                customerId: "alice",
                state: .pending,
                attempts: 2,
                replay: true,
                deadline: 1_800_000_300_000,
                deliveredAt: 1_800_000_200_000,
                lastAttemptAt: 1_800_000_100_000,
                lastStatus: 503,
                lastError: "the receiver answered HTTP 503",
                lastAnswer: "busy",
                lastUrl: "https://example.com/hook",
                lastDuration: 12,
                createdAt: 1_800_000_000_000,
                updatedAt: 1_800_000_100_000
            )
            var bare = full
            bare.id = "dlv_bare"
            (bare.customerId, bare.deliveredAt, bare.lastAttemptAt, bare.lastStatus) = (nil, nil, nil, nil)
            (bare.lastError, bare.lastAnswer, bare.lastUrl, bare.lastDuration) = (nil, nil, nil, nil)
            bare.replay = false
            let job = Job(
                kind: .delivery,
                jobKey: full.id,
                state: .queued,
                queueGroup: "ep_1",
                stream: full.stream,
                position: event.sequence,
                attempts: 0,
                dueAt: 1_800_000_000_500,
                createdAt: full.createdAt,
                updatedAt: full.createdAt
            )
            // Hand-written rows in, Codable out; Codable in, hand-written out.
            let codable = bare
            try await fixture.server.database.transaction { db in
                try await store.insert([full], jobs: [job], on: db)
                try await store.insert(codable, on: db)
            }
            var joined = full
            joined.nextAttemptAt = job.dueAt
            let read = try #require(try await store.webhookDelivery(id: full.id, on: store.sql))
            #expect("\(read)" == "\(joined)")
            let sending = try await store.deliveriesToSend(ids: [full.id, bare.id], on: store.sql)
            #expect(Set(sending.map(\.delivery.id)) == [full.id, bare.id])
            for read in sending {
                #expect("\(read.delivery)" == "\(read.delivery.id == full.id ? full : bare)")
                #expect(read.body == stored.body && read.occurredAt == stored.occurredAt)
            }
            let toSend = try #require(
                try await store.eventStore.eventsToSend(
                    after: 0,
                    limit: 10,
                    bundleId: ServerFixture.bundleId,
                    on: store.sql
                ).last
            )
            #expect(toSend.event.id == stored.id && toSend.event.customerId == stored.customerId)
            #expect(toSend.body == stored.body && toSend.occurredAt == stored.occurredAt)
            #expect(try ColumnNames.encoder.encode(full).map(\.0) == WebhookDeliveryRecord.columns)
            #expect(WebhookDeliveryRecord.columns.count == full.row.count)
        }
    }

    /// Records one event for each of `customers` (their streams are independent, so they may go in one batch).
    static func credit(_ fixture: ServerFixture, customers: Int, prefix: String) async throws {
        try await credit(fixture.server, customers: customers, prefix: prefix)
    }

    static func credit(_ server: PurchaseServer, customers: Int, prefix: String) async throws {
        for number in 1...customers {
            _ = try await server.ledger.adjustBalance(
                bundleId: ServerFixture.bundleId,
                customerId: "\(prefix)-\(number)",
                credit: "gems",
                delta: 1,
                requestId: "\(prefix)-\(number)",
                note: "test"
            )
        }
    }

    /// A batch bigger than the endpoint's concurrency goes out a few requests at a time, and each attempt's timeout
    /// runs from its own request (`EndpointTurns`): twelve answers of 1.5 s each, two at a time, take 9 s, and none
    /// fails, as the last four did waiting in the HTTP client's pool (after its 2 s connect timeout), and as the last
    /// four would under a timeout of 6 s run from the batch's start. The slack of 4.5 s an attempt is for a loaded
    /// machine: with 0.4 s answers and a 1 s timeout the full suite timed some out, and with 1.5 s answers and a 4 s
    /// timeout a fresh clone's `.ci/run` timed two out, on 2026-12-01.
    @Test func aBatchGoesOutAFewRequestsAtATimeEachWithItsOwnTimeout() async throws {
        try await ServerFixture.run(configure: {
            WebhookTests.loopback(&$0)
            $0.webhooks.timeout = .seconds(6)
            $0.webhooks.concurrencyPerEndpoint = 2
            $0.webhooks.batchPerEndpoint = 12
        }) { fixture in
            let receiver = WebhookReceiver()
            receiver.behaviour = .acceptAfter(.milliseconds(1500))
            try await Self.withEndpoint(fixture, receiver) { created in
                try await Self.credit(fixture, customers: 12, prefix: "slow")
                var delivered: [Components.Schemas.WebhookDelivery] = []
                try await Self.withWorker(fixture) {
                    try await waitUntil(timeout: .seconds(30)) {
                        delivered = try await fixture.server.webhookHistory.deliveries(
                            bundleId: ServerFixture.bundleId,
                            endpointId: created.endpoint.id,
                            state: .delivered
                        ).items
                        return delivered.count == 12
                    }
                }
                // (In the client's pool, the last ones failed, `getConnectionFromPoolTimeout`, and were sent again.)
                #expect(delivered.map(\.attempts) == Array(repeating: 1, count: 12), "none failed waiting for its turn")
                #expect(receiver.count == 12, "every event sent once")
                #expect(receiver.mostAtOnce == 2)
                let verified = receiver.deliveries.filter(\.verified).count
                #expect(verified == 12)
            }
        }
    }

    /// A backlog goes out batch after batch, whatever the window: while a batch that left events waiting is under way,
    /// the rounds come at the catching-up pace, so the next one follows it at once. With a one-second window, forty
    /// events in batches of four to a receiver that takes 20 ms would take ten seconds otherwise.
    @Test func aBacklogDoesNotWaitForTheWindowBetweenBatches() async throws {
        try await ServerFixture.run(configure: {
            WebhookTests.loopback(&$0)
            $0.webhooks.concurrencyPerEndpoint = 4
            $0.webhooks.batchPerEndpoint = 4
            $0.webhooks.batchWindow = .seconds(1)
        }) { fixture in
            let receiver = WebhookReceiver()
            receiver.behaviour = .acceptAfter(.milliseconds(20))
            try await Self.withEndpoint(fixture, receiver) { created in
                try await Self.credit(fixture, customers: 40, prefix: "backlog")
                try await Self.withWorker(fixture) {
                    let start = ContinuousClock.now
                    try await waitUntil(timeout: .seconds(30)) { receiver.count >= 40 }
                    let took = ContinuousClock.now - start
                    #expect(took < .seconds(5), "forty events took \(took)")
                }
            }
        }
    }

    /// A server that stopped without giving up its endpoints (killed) leaves their dispatcher roles in the database;
    /// the next server that owns the SQLite file frees them at start, so the endpoints' events do not wait for that
    /// lease to lapse (an hour here).
    @Test func theOwnerOfAnSQLiteFileFreesTheRolesAStoppedServerHeld() async throws {
        try await ServerFixture.run(persistent: true, configure: WebhookTests.loopback) { fixture in
            let receiver = WebhookReceiver()
            try await Self.withEndpoint(fixture, receiver) { created in
                let now = fixture.server.webhookDeliveries.clock.milliseconds
                let taken = try await fixture.server.database.transaction { db in
                    try await fixture.server.jobs.hold(
                        .delivery,
                        group: created.endpoint.id,
                        for: "wkr_killed",
                        until: now + 3_600_000,
                        on: db
                    )
                }
                #expect(taken)
                fixture.server.queueLock?.release()

                let next = try await PurchaseServer.open(fixture.server.configuration)
                #expect(try await next.jobs.holds(.delivery, on: next.database.sql).isEmpty)
                try await withServices({ _ in
                    ServiceGroup(
                        configuration: .init(
                            services: [WebhookWorker(server: next)],
                            gracefulShutdownSignals: [],
                            logger: .init(label: "next")
                        )
                    )
                }) { _ in
                    try await Self.credit(next, customers: 1, prefix: "after-restart")
                    try await waitUntil(timeout: .seconds(15)) { receiver.count == 1 }
                }
                try await next.shutdown()
            }
        }
    }

    @Test func aRoundUnderASteadyStreamWaitsForTheWindowAndOneBehindDoesNot() {
        let start = ContinuousClock().now
        let now: Int64 = 1_800_000_000_000
        var pacing = RoundPacing(window: .milliseconds(50), lastRound: start - .seconds(60))
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
