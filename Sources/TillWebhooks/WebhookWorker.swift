import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TillContract
import TillHTTPKit
import TillJobs
import TillLedger
import Tracing

/// Delivers events to the apps' webhook endpoints in the background (`WebhookDeliveries`), on the job runner
/// (`WebhookAttempts`, the kind's handler): each claim of the runner is a round, each attempt a task of its own.
///
/// A graceful shutdown lets the attempts under way finish and records them, and gives up the endpoints it dispatched;
/// the rest waits in the database for the next start (a claim of a process that stopped lapses, and its attempt is
/// sent again with the same `webhook-id`; events it had sent at dispatch are sent again once its role as their
/// endpoint's dispatcher lapses).
public struct WebhookWorker: Service {
    package let deliveries: WebhookDeliveries
    package let committed: SequenceMark
    package let endpointChanges: Revision

    /// The worker of `deliveries`, woken when an event is committed (`committed`) and when an endpoint changes.
    package init(deliveries: WebhookDeliveries, committed: SequenceMark, endpointChanges: Revision) {
        self.deliveries = deliveries
        self.committed = committed
        self.endpointChanges = endpointChanges
    }

    public func run() async throws {
        let client = WebhookClient(settings: deliveries.settings)
        let attempts = WebhookAttempts(
            deliveries: deliveries,
            committed: committed,
            endpointChanges: endpointChanges,
            client: client
        )
        await JobRunner(queue: deliveries.jobs, handler: attempts, logger: deliveries.logger).run()
        await attempts.stop()
        await client.shutdown()
    }
}

/// The webhook deliveries as the job runner runs them. Each claim is a **round**:
///
/// 1. in one transaction, it records the attempts that ended since the last round (and the batches sent at dispatch
///    whose attempts have all ended, with their endpoints' cursors' moves) and claims what is due for each endpoint in
///    the queue (a customer's next delivery as soon as the one before it is recorded): at most `batchPerEndpoint`
///    under way to one endpoint (one while it keeps failing), and `concurrency` in all (the runner's room), so a slow
///    or dead receiver holds up only its own deliveries; `concurrencyPerEndpoint` of an endpoint's attempts send at
///    once (`EndpointTurns`);
/// 2. then it takes the events recorded since each enabled endpoint's cursor (this process's are known at once; the
///    endpoints and the last event are read again every second, for other processes' changes, and at once after this
///    process changes an endpoint): a healthy endpoint's first ones are sent at once, before anything is written
///    (`WebhookDeliveries.sendAtDispatch`, as this worker holds the endpoint's group, `JobQueue.hold`), the others
///    dispatched into the queue.
///
/// Rounds are paced by `RoundPacing` (the runner's interval between claims), so that under a steady stream of events
/// each round takes a batch. An endpoint's attempts run on one of the client's event loops
/// (`WebhookClient.executor(for:)`).
final class WebhookAttempts: JobHandler {
    /// What the rounds keep from one to the next. Only the runner's loop claims, one round at a time; the lock keeps
    /// the handler `Sendable`, and is never held across a suspension.
    struct Rounds {
        var lastSweep: ContinuousClock.Instant
        /// When the last round started.
        var roundStartedAt: ContinuousClock.Instant
        var endpoints: [WebhookEndpointRecord] = []
        /// Who holds each endpoint, as last read: the worker that sends its newest events at dispatch.
        var holds: [String: JobHold] = [:]
        var readAt: ContinuousClock.Instant
        var readRevision: UInt64
        var lastEvent: Int64 = 0
        var pacing: RoundPacing
        /// The deliveries this process claimed and has not recorded yet, by endpoint: never claimed again meanwhile,
        /// even once their lease has passed (a clock that jumps, an answer slower than the lease).
        var held: [String: Set<String>] = [:]
        /// Until when this worker holds each endpoint it dispatches (the server's clock, UNIX ms).
        var dispatcherUntil: [String: Int64] = [:]
        /// The batches sent at dispatch and not recorded yet, by endpoint, with the outcomes of those that ended.
        var sent: [String: (batch: WebhookDeliveries.SentAtDispatch, outcomes: [WebhookDeliveries.Outcome])] = [:]
    }

    let deliveries: WebhookDeliveries
    let committed: SequenceMark
    let endpointChanges: Revision
    let client: WebhookClient
    /// This worker, as the holder of the endpoints it dispatches.
    let worker = "wkr_" + UUID().uuidString.lowercased()
    let inFlight = InFlightByEndpoint()
    let turns: EndpointTurns
    let ended = EndedAttempts()
    let clock = ContinuousClock()
    private let rounds: Mutex<Rounds>

    init(deliveries: WebhookDeliveries, committed: SequenceMark, endpointChanges: Revision, client: WebhookClient) {
        self.deliveries = deliveries
        self.committed = committed
        self.endpointChanges = endpointChanges
        self.client = client
        self.turns = EndpointTurns(limit: deliveries.settings.concurrencyPerEndpoint)
        let longAgo = clock.now - .seconds(60)
        self.rounds = Mutex(
            Rounds(
                lastSweep: longAgo,
                roundStartedAt: longAgo,
                readAt: longAgo,
                readRevision: endpointChanges.current,
                pacing: RoundPacing(window: deliveries.settings.batchWindow, lastRound: longAgo)
            )
        )
    }

    var kind: JobKind { .delivery }
    /// Another process may have recorded events.
    var longestWait: Duration { .seconds(1) }

    /// The attempts under way are the runner's, up to `concurrency`. With no endpoint, nothing is due (a paused
    /// endpoint's deliveries wait for it) and events do not wake the worker: no round until the endpoints are read
    /// again, a second later or at once after a change.
    ///
    /// With every slot taken, a round still comes at least once a second (`keepUp`): it records what ended, renews
    /// the holds of the batches sent at dispatch (which outlive a lease otherwise, and would be sent again by another
    /// server), reads the endpoints again and dispatches new events into the queue.
    func room(running: Int) -> JobRoom {
        let (idle, sinceRound) = rounds.withLock { rounds in
            (
                rounds.endpoints.isEmpty && clock.now - rounds.readAt < .seconds(1)
                    && endpointChanges.current == rounds.readRevision,
                clock.now - rounds.roundStartedAt
            )
        }
        if idle && ended.count == 0 { return .claim(0) }
        let room = deliveries.settings.concurrency - running
        return room > 0 ? .claim(room) : sinceRound >= longestWait ? .keepUp : .claim(0)
    }

    /// The pacing's window (or its catching-up pace) from the start of the last round to the next: `RoundPacing` counts
    /// it from the round's end, and the runner from its start.
    func claimInterval() -> Duration { rounds.withLock { $0.pacing.nextRound - $0.roundStartedAt } }

    func executor(for attempt: WebhookDeliveries.Attempt) -> (any TaskExecutor)? {
        client.executor(for: attempt.endpoint.id)
    }

    /// One attempt: its turn among the endpoint's requests, then the request; none once the server is stopping (an
    /// attempt that had not started waits in the database: its claim lapses; a batch sent at dispatch is not
    /// recorded). Its outcome is recorded by the next round.
    func run(_ attempt: WebhookDeliveries.Attempt) async {
        let endpointId = attempt.endpoint.id
        await turns.take(endpointId)
        if !Task.isShuttingDownGracefully {
            // A span that continues the trace of the change that wrote the event (docs/tracing.md).
            let outcome = await Traces.withSpan("webhook.attempt", continuing: attempt.trace, ofKind: .client) { span in
                let outcome = await deliveries.send(attempt, client: client)
                if span.isRecording {
                    span.attributes["till.bundle_id"] = attempt.endpoint.bundleId
                    span.attributes["till.endpoint_id"] = endpointId
                    span.attributes["till.event_id"] = attempt.delivery.eventId
                    span.attributes["till.event_type"] = attempt.delivery.eventType.rawValue
                    span.attributes["till.customer_id"] = attempt.delivery.customerId
                    span.attributes["till.attempt"] = attempt.number
                    span.attributes["http.response.status_code"] = outcome.answer.status
                    if !outcome.answer.isDelivered { span.setStatus(SpanStatus(code: .error)) }
                }
                return outcome
            }
            ended.add(outcome)
        }
        turns.give(endpointId)
        inFlight.add(-1, to: endpointId)
    }

    /// One round (see the type); answers the attempts to send, each counted under way at its endpoint at once (the
    /// round's own room for the next endpoint, and for the events it sends at dispatch, counts them).
    func claim(limit: Int) async throws -> [WebhookDeliveries.Attempt] {
        var rounds = self.rounds.withLock { $0 }
        rounds.roundStartedAt = clock.now
        var recording: [WebhookDeliveries.Outcome] = []
        defer {
            // Recorded, or lost with a round that failed (then sent again once its lease has passed).
            for outcome in recording { rounds.held[outcome.attempt.endpoint.id]?.remove(outcome.attempt.delivery.id) }
            let kept = rounds
            self.rounds.withLock { $0 = kept }
        }
        let settings = deliveries.settings
        let jobs = deliveries.jobs
        let store = deliveries.store
        if clock.now - rounds.readAt >= .seconds(1) || endpointChanges.current != rounds.readRevision {
            rounds.readRevision = endpointChanges.current
            rounds.readAt = clock.now
            rounds.endpoints = try await store.enabledWebhookEndpoints(on: store.sql)
            rounds.holds = rounds.endpoints.isEmpty ? [:] : try await jobs.holds(.delivery, on: store.sql)
            committed.watch(!rounds.endpoints.isEmpty)
            rounds.lastEvent = max(rounds.lastEvent, try await store.eventStore.lastEventSequence(on: store.sql))
        }
        rounds.lastEvent = max(rounds.lastEvent, committed.current)
        if clock.now - rounds.lastSweep >= .seconds(60) {
            rounds.lastSweep = clock.now
            let expired = try await deliveries.deadLetterExpired()
            if expired > 0 {
                deliveries.logger.warning("\(expired) webhook deliveries dead-lettered at their deadline")
            }
        }
        // What ended is recorded and what is due claimed in one transaction.
        let outcomes = ended.take()
        note(outcomes, in: &rounds.endpoints)
        recording = outcomes.filter(\.attempt.stored)
        for outcome in outcomes where !outcome.attempt.stored {
            rounds.sent[outcome.attempt.endpoint.id]?.outcomes.append(outcome)
        }
        // A batch sent at dispatch is recorded once all of its attempts have ended.
        let complete = rounds.sent.values.filter { $0.outcomes.count == $0.batch.attempts.count }
        for batch in complete { rounds.sent[batch.batch.endpoint.id] = nil }
        var room = limit
        var claims: [(endpoint: WebhookEndpointRecord, limit: Int)] = []
        for endpoint in rounds.endpoints {
            let cap = endpoint.consecutiveFailures >= settings.failuresBeforeProbing ? 1 : settings.batchPerEndpoint
            let endpointRoom = min(cap - inFlight.count(endpoint.id), room)
            guard endpointRoom > 0 else { continue }
            claims.append((endpoint, endpointRoom))
            room -= endpointRoom
        }
        let result = try await deliveries.round(
            recording: recording,
            recordingSent: complete,
            claiming: claims,
            held: rounds.held
        )
        var attempts = result.attempts
        for (batch, recorded) in result.recorded {
            guard let index = rounds.endpoints.firstIndex(where: { $0.id == batch.endpoint.id }) else { continue }
            if recorded {
                rounds.endpoints[index].dispatchedThrough = max(
                    rounds.endpoints[index].dispatchedThrough,
                    batch.through
                )
            } else {
                // Another worker dispatched those events: read the endpoint again.
                rounds.dispatcherUntil[batch.endpoint.id] = nil
                rounds.readAt = clock.now - .seconds(60)
            }
        }
        rounds.pacing.ran(
            at: clock.now,
            claimed: attempts.map { (endpoint: $0.endpoint.id, dueAt: $0.dueAt) },
            limits: claims.map { (endpoint: $0.endpoint.id, limit: $0.limit) },
            now: deliveries.clock.milliseconds
        )
        for attempt in attempts {
            rounds.held[attempt.endpoint.id, default: []].insert(attempt.delivery.id)
            inFlight.add(1, to: attempt.endpoint.id)
        }
        // A batch under way that left events waiting: the next round comes at the catching-up pace, so that the next
        // batch follows it at once. Its endpoint stays this worker's (a batch whose attempts wait for their turns may
        // outlast a lease).
        if rounds.sent.values.contains(where: \.batch.more) { rounds.pacing.fellBehind() }
        // From here on, what was claimed is under way: a failure to renew a hold or to dispatch is logged, and the
        // attempts go out (the next round tries again).
        do {
            for endpointId in rounds.sent.keys {
                rounds.dispatcherUntil[endpointId] = try await deliveries.holdDispatcher(
                    endpointId: endpointId,
                    worker: worker,
                    until: rounds.dispatcherUntil[endpointId]
                )
            }
            // Then each endpoint's new events: sent at once when they may be (`sendAtDispatch`), else into the
            // queue (claimed from the next round on); neither while a batch sent at dispatch is under way (the cursor
            // moves when it is recorded, in the round above at the earliest). An endpoint another worker dispatches
            // (as last read) is left to it until its hold lapses.
            let now = deliveries.clock.milliseconds
            for index in rounds.endpoints.indices
            where rounds.endpoints[index].dispatchedThrough < rounds.lastEvent
                && rounds.sent[rounds.endpoints[index].id] == nil
                && !(rounds.holds[rounds.endpoints[index].id].map { $0.holder != worker && $0.heldUntil > now }
                    ?? false)
            {
                let endpoint = rounds.endpoints[index]
                let endpointRoom = min(
                    settings.batchPerEndpoint - inFlight.count(endpoint.id),
                    settings.concurrency - inFlight.total
                )
                if let (batch, until) = try await deliveries.sendAtDispatch(
                    endpoint: endpoint,
                    room: endpointRoom,
                    worker: worker,
                    heldUntil: rounds.dispatcherUntil[endpoint.id]
                ) {
                    rounds.dispatcherUntil[endpoint.id] = until
                    rounds.sent[endpoint.id] = (batch, [])
                    for attempt in batch.attempts { inFlight.add(1, to: attempt.endpoint.id) }
                    attempts += batch.attempts
                    // More events wait: the next round comes soon (a backlog goes out at the receiver's pace, even
                    // one of a few customers, whose batches stop at each one's second event).
                    if batch.more { rounds.pacing.fellBehind() }
                    continue
                }
                guard let cursor = try await deliveries.dispatch(endpointId: endpoint.id, worker: worker) else {
                    // Another worker has become its dispatcher (or it is gone, or paused): read it again.
                    rounds.readAt = clock.now - .seconds(60)
                    continue
                }
                if cursor > endpoint.dispatchedThrough {
                    rounds.endpoints[index].dispatchedThrough = cursor
                    jobs.wake(.delivery)  // the next round claims them without waiting
                }
            }
        } catch {
            deliveries.logger.error("webhook deliveries: \(error)")
        }
        return attempts
    }

    /// After the runner stopped (every attempt ended): records the attempts that ended during the shutdown, then
    /// this worker holds no endpoint any more.
    func stop() async {
        let rounds = self.rounds.withLock { $0 }
        var sent = rounds.sent
        do {
            let outcomes = ended.take()
            for outcome in outcomes where !outcome.attempt.stored {
                sent[outcome.attempt.endpoint.id]?.outcomes.append(outcome)
            }
            _ = try await deliveries.round(
                recording: outcomes.filter(\.attempt.stored),
                recordingSent: sent.values.filter { $0.outcomes.count == $0.batch.attempts.count },
                claiming: []
            )
            try await deliveries.jobs.releaseHolds(.delivery, of: worker)
        } catch {
            deliveries.logger.error("webhook deliveries: \(error)")
        }
    }

    /// Keeps each endpoint's failure count as its attempts left it (the caps of this round and the next); the
    /// database's is read again within a second.
    private func note(_ outcomes: [WebhookDeliveries.Outcome], in endpoints: inout [WebhookEndpointRecord]) {
        for outcome in outcomes {
            guard let index = endpoints.firstIndex(where: { $0.id == outcome.attempt.endpoint.id }) else { continue }
            if outcome.answer.isDelivered {
                endpoints[index].consecutiveFailures = 0
            } else {
                endpoints[index].consecutiveFailures += 1
            }
        }
    }
}

/// When the worker's next round may start.
///
/// Each round is a transaction (and a dispatch before it another), with its wake-ups, whatever it records and claims.
/// With a round every 2 ms while attempts were under way, events recorded at 500 a second went out one or two a round,
/// and an endpoint added 0.58 ms of CPU per event; with rounds at least 10 ms apart (five events a round), 0.27 to 0.28
/// ms; 50 ms apart (25 a round), 0.17 to 0.25 ms, 0.19 at the middle (docs/benchmarks.md). So a round follows the one before it after
/// `window` (`WebhookSettings.batchWindow`) at the earliest, and what was recorded meanwhile goes out together; a first
/// event after a quiet time is not held back. When the worker is behind — a round claimed all it had room for or sent
/// at dispatch with more events waiting (until that batch has been recorded), or a delivery that had been due longer
/// than `window` (a backlog, a customer's next event waiting for the one before it) — the next round comes after
/// `catchingUp`, so a backlog goes out at the receivers' pace.
struct RoundPacing {
    var window: Duration
    var catchingUp: Duration = .milliseconds(2)
    private(set) var lastRound: ContinuousClock.Instant
    private(set) var behind = false

    init(window: Duration, lastRound: ContinuousClock.Instant) {
        self.window = window
        self.lastRound = lastRound
    }

    var nextRound: ContinuousClock.Instant { lastRound + (behind ? catchingUp : window) }

    /// The round sent as many events at dispatch as an endpoint had room for: more may wait.
    mutating func fellBehind() { behind = true }

    /// A round ran at `instant`: it claimed deliveries due at `dueAt` (UNIX ms; `now` on the same clock), within
    /// `limits` for each endpoint.
    mutating func ran(
        at instant: ContinuousClock.Instant,
        claimed: [(endpoint: String, dueAt: Int64)],
        limits: [(endpoint: String, limit: Int)],
        now: Int64
    ) {
        lastRound = instant
        let late = now - window.milliseconds
        behind =
            claimed.contains { $0.dueAt < late }
            || limits.contains { limit in claimed.count { $0.endpoint == limit.endpoint } >= limit.limit }
    }
}

/// Attempts under way, per endpoint: shared by the worker's loop and the tasks it starts.
final class InFlightByEndpoint: Sendable {
    private let counts = Mutex<[String: Int]>([:])
    var total: Int { counts.withLock { $0.values.reduce(0, +) } }
    func count(_ endpoint: String) -> Int { counts.withLock { $0[endpoint] ?? 0 } }
    func add(_ delta: Int, to endpoint: String) { counts.withLock { $0[endpoint, default: 0] += delta } }
}

/// Requests under way to each endpoint, at most `limit` at once: a round's attempts beyond it wait here for a turn, in
/// the order they came, so that each attempt's timeout runs from its own request (in the HTTP client's pool, a request
/// that waits longer than the connect timeout for a connection fails unsent, `getConnectionFromPoolTimeout`, and its
/// deadline runs while it waits).
final class EndpointTurns: Sendable {
    private struct Turns {
        var running = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    let limit: Int
    private let turns = Mutex<[String: Turns]>([:])

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Waits for a turn at `endpoint` (at once when fewer than `limit` are under way and none waits).
    func take(_ endpoint: String) async {
        let limit = limit
        let now = turns.withLock { turns in
            guard turns[endpoint, default: Turns()].running < limit else { return false }
            turns[endpoint, default: Turns()].running += 1
            return true
        }
        guard !now else { return }
        await withCheckedContinuation { continuation in
            let now = turns.withLock { turns in
                // A turn given back meanwhile.
                if turns[endpoint, default: Turns()].running < limit {
                    turns[endpoint, default: Turns()].running += 1
                    return true
                }
                turns[endpoint, default: Turns()].waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Gives a turn back: to the first attempt waiting, if one is.
    func give(_ endpoint: String) {
        let next = turns.withLock { turns -> CheckedContinuation<Void, Never>? in
            guard var entry = turns[endpoint] else { return nil }
            defer { turns[endpoint] = entry.running == 0 ? nil : entry }
            guard !entry.waiting.isEmpty else {
                entry.running -= 1
                return nil
            }
            return entry.waiting.removeFirst()
        }
        next?.resume()
    }
}

/// Attempts that ended and wait for the loop to record them.
final class EndedAttempts: Sendable {
    private let outcomes = Mutex<[WebhookDeliveries.Outcome]>([])
    var count: Int { outcomes.withLock { $0.count } }
    func add(_ outcome: WebhookDeliveries.Outcome) { outcomes.withLock { $0.append(outcome) } }
    func take() -> [WebhookDeliveries.Outcome] {
        outcomes.withLock { outcomes in
            defer { outcomes.removeAll() }
            return outcomes
        }
    }
}
