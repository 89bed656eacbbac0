import Foundation
import HTTPTypes
import Logging
import SQLKit
import Synchronization
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillJobs
import TillLedger
import TillStorage

/// The deliveries of events to webhook endpoints (docs/events.md, "Delivery"), at least once and in order for each
/// customer:
///
/// - **dispatch**: the events recorded since an endpoint's cursor become deliveries to it (the types it takes), each a
///   `delivery` job in the stream of its customer at that endpoint, in one transaction with the cursor's move;
/// - **an attempt**: the event, signed as Standard Webhooks, POSTed by `WebhookClient`; a 2xx delivers it, anything
///   else schedules the next attempt (`WebhookSettings.schedule`) until `retryFor` has passed, then dead-letters it.
///   Every attempt and the start of its answer are kept. A customer's next event waits until the one before it is
///   delivered or dead-lettered (the stream), so a receiver sees each customer's events in the order they happened;
/// - an endpoint that keeps failing gets one attempt at a time, and the first success makes everything it has
///   waiting due at once (a receiver that was down receives its backlog now, not at each delivery's next retry);
/// - **replay**: one event, or every event since a time, delivered again with its own `webhook-id`.
///
/// `WebhookWorker` runs it; nothing here is on a purchase's path, so a receiver that is slow or never answers holds up
/// only its own endpoint's deliveries.
public struct WebhookDeliveries: Sendable {
    package let settings: WebhookSettings
    package let database: TillDatabase
    let store: WebhookStore
    package let endpoints: WebhookEndpoints
    package let jobs: JobQueue
    package let metrics: any WebhookMetrics
    package let clock: ServerClock
    package let logger: Logger
    /// When each endpoint's last success was written.
    let successes = SuccessTimes()

    /// Events read per dispatch transaction.
    static let dispatchBatch = 500

    package init(
        settings: WebhookSettings,
        database: TillDatabase,
        endpoints: WebhookEndpoints,
        jobs: JobQueue,
        metrics: any WebhookMetrics,
        clock: ServerClock,
        logger: Logger
    ) {
        self.settings = settings
        self.database = database
        self.store = WebhookStore(database: database)
        self.endpoints = endpoints
        self.jobs = jobs
        self.metrics = metrics
        self.clock = clock
        self.logger = logger
    }

    // MARK: Dispatching

    /// Makes deliveries of the events recorded since the endpoint's cursor, a batch per transaction; answers the
    /// endpoint's cursor after (nil when another process holds the endpoint, or it is gone or paused).
    package func dispatch(endpointId: String, worker: String) async throws -> Int64? {
        var cursor: Int64?
        while true {
            let (through, more) = try await dispatchBatch(endpointId: endpointId, worker: worker)
            guard let through else { return cursor }
            cursor = through
            if !more { return cursor }
        }
    }

    /// One batch of one endpoint's dispatch, in one transaction; answers the endpoint's cursor after and whether more
    /// events wait. Another process dispatching the same endpoint (PostgreSQL), or sending its events at dispatch,
    /// makes this one skip it.
    private func dispatchBatch(endpointId: String, worker: String) async throws -> (Int64?, Bool) {
        let now = clock.milliseconds
        let deadline = now + settings.retryFor.milliseconds
        return try await database.transaction { db -> (Int64?, Bool) in
            guard var endpoint = try await self.store.lockWebhookEndpoint(id: endpointId, on: db), endpoint.enabled,
                try await !self.jobs.isHeld(.delivery, group: endpointId, byAnotherThan: worker, on: db)
            else { return (nil, false) }
            let events = try await self.store.eventStore.eventsToDispatch(
                after: endpoint.dispatchedThrough,
                limit: Self.dispatchBatch,
                bundleId: endpoint.bundleId,
                on: db
            )
            guard let last = events.last else { return (endpoint.dispatchedThrough, false) }
            let made = events.filter { self.delivers($0.type, isImport: $0.isImport, to: endpoint) }.map {
                self.delivery(of: $0, to: endpoint, replay: false, deadline: deadline, now: now)
            }
            try await self.store.insert(made.map(\.0), jobs: made.map(\.1), on: db)
            endpoint.dispatchedThrough = last.sequence
            try await self.store.moveCursor(endpointId: endpoint.id, to: last.sequence, at: now, on: db)
            return (last.sequence, events.count == Self.dispatchBatch)
        }
    }

    /// Whether a dispatch, or a replay of every event since a time, makes a delivery of an event of `type` to
    /// `endpoint`: of a type the endpoint takes, and not of an import unless `webhooks.deliver-imports` says so. (A
    /// replay of one event, named by its id, sends it whatever it is.)
    private func delivers(_ type: EventType, isImport: Bool, to endpoint: WebhookEndpointRecord) -> Bool {
        endpoint.accepts(type) && (settings.deliverImports || !isImport)
    }

    /// A delivery of `event` to `endpoint`, queued in the customer's stream at the event's place.
    private func queue(
        _ event: EventRecord,
        to endpoint: WebhookEndpointRecord,
        replay: Bool,
        deadline: Int64,
        now: Int64,
        on db: any SQLDatabase
    ) async throws {
        let (delivery, job) = self.delivery(
            of: .init(sequence: event.sequence, id: event.id, type: event.type, customerId: event.customerId),
            to: endpoint,
            replay: replay,
            deadline: deadline,
            now: now
        )
        try await store.insert([delivery], jobs: [job], on: db)
    }

    /// A delivery of `event` to `endpoint` and its job: in the customer's stream at that endpoint, at the event's place.
    private func delivery(
        of event: EventStore.EventToDispatch,
        to endpoint: WebhookEndpointRecord,
        replay: Bool,
        deadline: Int64,
        now: Int64
    ) -> (WebhookDeliveryRecord, Job) {
        let delivery = WebhookDeliveryRecord(
            id: Self.newId(at: now),
            endpointId: endpoint.id,
            bundleId: endpoint.bundleId,
            eventSequence: event.sequence,
            eventId: event.id,
            eventType: event.type,
            customerId: event.customerId,
            state: .pending,
            attempts: 0,
            replay: replay,
            deadline: deadline,
            createdAt: now,
            updatedAt: now
        )
        let job = Job(
            kind: .delivery,
            jobKey: delivery.id,
            state: .queued,
            queueGroup: endpoint.id,
            stream: delivery.stream,
            position: event.sequence,
            attempts: 0,
            dueAt: now,
            claimedUntil: nil,
            createdAt: now,
            updatedAt: now
        )
        return (delivery, job)
    }

    // MARK: Sending at dispatch

    /// An endpoint's newest events, sent as they are dispatched (`sendAtDispatch`): their deliveries are written with
    /// the cursor's move once every attempt has ended (`round(recording:recordingSent:claiming:)`).
    struct SentAtDispatch: Sendable {
        var endpoint: WebhookEndpointRecord
        /// The endpoint's cursor before and after these events (the ones it does not take included).
        var from: Int64
        var through: Int64
        var attempts: [Attempt]
        /// Whether events wait after it (it stopped at its room, or before a customer's second event or one whose
        /// customer has a delivery waiting).
        var more = false
    }

    /// How long a worker stays an endpoint's dispatcher without renewing it: longer than an attempt. (A batch whose
    /// attempts wait for their turns may take longer: the worker renews the role meanwhile, `holdDispatcher`.)
    var dispatcherLease: Duration { settings.timeout + .seconds(5) }

    /// Keeps `worker` an endpoint's dispatcher, which it is `until` (UNIX ms; nil: not known to be), renewing the role
    /// when less than half of its lease is left. Answers until when it is; nil when another worker is.
    func holdDispatcher(endpointId: String, worker: String, until held: Int64?) async throws -> Int64? {
        let now = clock.milliseconds
        if let held, held - now >= dispatcherLease.milliseconds / 2 { return held }
        let lease = now + dispatcherLease.milliseconds
        let isDispatcher = try await database.transaction(bookkeeping: true) { db in
            // A paused or deleted endpoint is nobody's to send to.
            guard let endpoint = try await self.store.webhookEndpoint(id: endpointId, on: db), endpoint.enabled else {
                return false
            }
            return try await self.jobs.hold(.delivery, group: endpointId, for: worker, until: lease, on: db)
        }
        return isDispatcher ? lease : nil
    }

    /// The first events after an endpoint's cursor, to send at once, before any row is written, as far as that keeps
    /// the guarantees: at most `room` of them, each its customer's only one in the batch, none of a customer who has a
    /// delivery waiting at this endpoint (the batch stops before the first that is), and `worker` the endpoint's
    /// dispatcher (it becomes it unless another worker is, when `heldUntil` has not half its lease left). Nil when not
    /// even the first may go: the events go through the queue (`dispatch`). Answers also until when `worker` is the
    /// dispatcher.
    ///
    /// A delivered event then costs one row (its delivery, written delivered) instead of a delivery and a job
    /// written, claimed, updated and deleted. If the process dies before the attempts are recorded, the cursor has not
    /// moved: the events are sent again, with the same `webhook-id`. A failed attempt is written as a delivery with its
    /// job, and the customer's next events wait for it in the queue, as any other.
    func sendAtDispatch(endpoint: WebhookEndpointRecord, room: Int, worker: String, heldUntil: Int64?)
        async throws
        -> (batch: SentAtDispatch, until: Int64)?
    {
        guard room > 0, endpoint.consecutiveFailures == 0 else { return nil }
        let events = try await store.eventStore.eventsToSend(
            after: endpoint.dispatchedThrough,
            limit: room * 2,
            bundleId: endpoint.bundleId,
            on: store.sql
        )
        let now = clock.milliseconds
        let deadline = now + settings.retryFor.milliseconds
        let made = events.map { event in
            (
                delivers(event.event.type, isImport: event.event.isImport, to: endpoint)
                    ? self.delivery(of: event.event, to: endpoint, replay: false, deadline: deadline, now: now).0 : nil,
                event
            )
        }
        let busy = try await store.busyDeliveryStreams(made.compactMap { $0.0?.stream }, on: store.sql)
        var taken: [(WebhookDeliveryRecord, EventStore.EventToSend)] = []
        var streams: Set<String> = []
        var through: Int64?
        var left = made.count
        for (delivery, event) in made {
            // An event the endpoint does not take is passed over.
            if let delivery {
                if taken.count == room { break }
                if let stream = delivery.stream {
                    guard !busy.contains(stream), streams.insert(stream).inserted else { break }
                }
                taken.append((delivery, event))
            }
            through = event.event.sequence
            left -= 1
        }
        guard !taken.isEmpty, let through,
            let until = try await holdDispatcher(endpointId: endpoint.id, worker: worker, until: heldUntil)
        else { return nil }
        let attempts = taken.map { delivery, event in
            Attempt(
                delivery: delivery,
                body: event.body,
                occurredAt: event.occurredAt,
                endpoint: endpoint,
                dueAt: now,
                number: 1,
                stored: false,
                trace: event.trace
            )
        }
        let batch = SentAtDispatch(
            endpoint: endpoint,
            from: endpoint.dispatchedThrough,
            through: through,
            attempts: attempts,
            more: left > 0 || events.count == room * 2
        )
        return (batch, until)
    }

    /// Records a batch sent at dispatch in `db`'s transaction: moves the endpoint's cursor past it and writes each
    /// delivery as its attempt left it (a failed one with its attempt and its job). Answers false, writing nothing,
    /// when the cursor moved meanwhile: another worker dispatched those events (it held the endpoint once this
    /// worker's hold lapsed), and these attempts were only the first of their sends.
    private func recordSent(
        _ batch: SentAtDispatch,
        _ ended: [(Outcome, WebhookDeliveryRecord)],
        now: Int64,
        on db: any SQLDatabase
    ) async throws -> Bool {
        guard
            try await store.moveCursor(
                endpointId: batch.endpoint.id,
                from: batch.from,
                to: batch.through,
                at: now,
                on: db
            )
        else { return false }
        var jobs: [Job] = []
        for (outcome, delivery) in ended where !outcome.answer.isDelivered {
            try await store.insert(Self.attemptRecord(outcome, delivery, now: now), on: db)
            jobs.append(
                Job(
                    kind: .delivery,
                    jobKey: delivery.id,
                    state: delivery.state == .deadLettered ? .deadLettered : .queued,
                    queueGroup: delivery.endpointId,
                    stream: delivery.stream,
                    position: delivery.eventSequence,
                    attempts: delivery.attempts,
                    dueAt: delivery.nextAttemptAt ?? now,
                    claimedUntil: nil,
                    lastError: outcome.answer.error,
                    createdAt: now,
                    updatedAt: now
                )
            )
            try await store.webhookEndpointFailed(id: batch.endpoint.id, at: now, on: db)
        }
        try await store.insert(ended.map(\.1), jobs: jobs, on: db)
        return true
    }

    /// The row of a failed attempt.
    private static func attemptRecord(_ outcome: Outcome, _ delivery: WebhookDeliveryRecord, now: Int64)
        -> WebhookAttemptRecord
    {
        let answer = outcome.answer
        return WebhookAttemptRecord(
            deliveryId: delivery.id,
            attempt: delivery.attempts,
            at: now,
            url: answer.url,
            status: answer.status,
            answer: answer.answer,
            error: answer.error,
            duration: answer.duration.milliseconds
        )
    }

    // MARK: Attempts

    /// `dlv_` and 32 hex digits, growing with time (`TimeOrderedId`).
    package static func newId(at now: Int64) -> String { TimeOrderedId.make("dlv_", at: now) }

    /// Claims up to `limit` due deliveries of an endpoint (the first of each customer's stream) for an attempt, in
    /// `db`'s transaction; a job whose delivery is no longer pending (an operator dead-lettered it, say) ends here.
    private func claim(endpoint: WebhookEndpointRecord, limit: Int, held: Set<String>, on db: any SQLDatabase)
        async throws -> [Attempt]
    {
        let claimed = try await jobs.claim(
            .delivery,
            group: endpoint.id,
            limit: limit,
            lease: settings.longestBatch + settings.timeout + .seconds(30),
            excluding: held.sorted(),
            on: db
        )
        guard !claimed.isEmpty else { return [] }
        let found = Dictionary(
            try await store.deliveriesToSend(ids: claimed.map(\.jobKey), on: db).map { ($0.delivery.id, $0) },
            uniquingKeysWith: { first, _ in first }
        )
        var attempts: [Attempt] = []
        var gone: [String] = []
        for job in claimed {
            guard let sending = found[job.jobKey], sending.delivery.state == .pending else {
                gone.append(job.jobKey)
                continue
            }
            attempts.append(
                Attempt(
                    delivery: sending.delivery,
                    body: sending.body,
                    occurredAt: sending.occurredAt,
                    endpoint: endpoint,
                    dueAt: job.dueAt,
                    number: job.attempts,
                    trace: sending.trace
                )
            )
        }
        try await jobs.finish(.delivery, keys: gone, on: db)
        return attempts
    }

    /// One delivery attempt, claimed: what to send (the event's stored JSON), and to whom.
    struct Attempt: Sendable {
        var delivery: WebhookDeliveryRecord
        var body: String
        var occurredAt: Int64
        var endpoint: WebhookEndpointRecord
        /// When its job was due (UNIX ms): long before the claim when the worker is behind.
        var dueAt: Int64
        /// The attempt's number: its job's count of attempts started, this one included (1 for one sent at dispatch,
        /// whose job is written afterwards with that count). The delivery keeps a copy of it.
        var number: Int
        /// False for an attempt sent at dispatch (`sendAtDispatch`): neither its delivery nor a job is written yet.
        var stored = true
        /// The trace of the change that wrote the event (docs/tracing.md), which the attempt continues.
        var trace: String? = nil
    }

    /// What one attempt came to, until it is recorded (`round(recording:claiming:)`, with the others that ended
    /// meanwhile).
    package struct Outcome: Sendable {
        var attempt: Attempt
        var answer: WebhookAnswer
    }

    /// Sends one attempt; its outcome is recorded later, in a batch (an answer not recorded when the process dies is
    /// sent again once its claim lapses, with the same `webhook-id`).
    func send(_ attempt: Attempt, client: WebhookClient) async -> Outcome {
        let body = Self.payload(
            body: attempt.body,
            type: attempt.delivery.eventType,
            occurredAt: attempt.occurredAt
        )
        // The signed time is the attempt's on the wall clock: receivers refuse a timestamp five minutes away from
        // theirs, whatever clock the server's schedule follows.
        let timestamp = Int64(Date().timeIntervalSince1970)
        let keys = attempt.endpoint.signingSecrets(at: clock.milliseconds).compactMap(StandardWebhooks.key(of:))
        // With tracing on, the receiver may continue the trace (W3C Trace Context); the signature does not cover it.
        let traceparent = Traces.current.map { [("traceparent", $0)] } ?? []
        let answer = await client.post(
            url: attempt.endpoint.url,
            body: body,
            headers: traceparent + [
                ("webhook-id", attempt.delivery.eventId),
                ("webhook-timestamp", String(timestamp)),
                (
                    "webhook-signature",
                    StandardWebhooks.signatureHeader(
                        id: attempt.delivery.eventId,
                        timestamp: timestamp,
                        body: body,
                        keys: keys
                    )
                ),
            ]
        )
        return Outcome(attempt: attempt, answer: answer)
    }

    /// The body of a delivery: the Standard Webhooks payload around the event's stored JSON (the same bytes for
    /// every attempt).
    package static func payload(body: String, type: EventType, occurredAt: Int64) -> [UInt8] {
        var writer = JSONWriter(capacity: body.utf8.count + 96)
        writer.object { w in
            w.key("data")
            w.verbatim(body)
            w.field("timestamp", ReceiptDate.formatRFC3339(Date(millisecondsSince1970: occurredAt)))
            w.field("type", type.rawValue)
        }
        return writer.bytes
    }

    /// What a round did: the attempts it claimed, and the batches sent at dispatch that it recorded (false for a
    /// batch it could not: another worker dispatched those events meanwhile).
    struct RoundResult: Sendable {
        var attempts: [Attempt] = []
        var recorded: [(batch: SentAtDispatch, recorded: Bool)] = []
    }

    /// One round of the worker, in one transaction: keeps the attempts that ended and their answers and ends their
    /// jobs' attempts (delivered, tried again later, or dead-lettered once the next attempt would come after the
    /// delivery's deadline), records the batches sent at dispatch whose attempts all ended (`recordSent`), then claims
    /// up to `limit` due deliveries of each endpoint in `claims` — a customer's next delivery as soon as the one before
    /// it is recorded. Answers the attempts to send.
    func round(
        recording outcomes: [Outcome],
        recordingSent sent: [(batch: SentAtDispatch, outcomes: [Outcome])] = [],
        claiming claims: [(endpoint: WebhookEndpointRecord, limit: Int)],
        held: [String: Set<String>] = [:]
    ) async throws -> RoundResult {
        let claims = claims.filter { $0.limit > 0 }
        guard !outcomes.isEmpty || !claims.isEmpty || !sent.isEmpty else { return RoundResult() }
        let now = clock.milliseconds
        let ended = outcomes.map { ($0, delivery(after: $0, now: now)) }
        let endedSent = sent.map { batch, outcomes in (batch, outcomes.map { ($0, delivery(after: $0, now: now)) }) }
        // An endpoint's success is written only when it ends failures, or a second after the last one written: every
        // delivery of a busy endpoint would rewrite the endpoint's row.
        var succeeded: Set<String> = []
        for (outcome, _) in ended + endedSent.flatMap(\.1) where outcome.answer.isDelivered {
            let endpoint = outcome.attempt.endpoint
            if endpoint.consecutiveFailures > 0 || succeeded.contains(endpoint.id)
                || successes.due(endpoint.id, at: now)
            {
                succeeded.insert(endpoint.id)
            }
        }
        let toNote = succeeded
        // Deliveries are no customer's data: the transaction leaves the caches of customer views alone.
        let (recovered, result) = try await database.transaction(bookkeeping: true) {
            db -> ([String], RoundResult) in
            var result = RoundResult()
            for (batch, ended) in endedSent {
                result.recorded.append((batch, try await self.recordSent(batch, ended, now: now, on: db)))
            }
            let recovered = try await self.record(ended, notingSuccessOf: toNote, now: now, on: db)
            for (endpoint, limit) in claims {
                result.attempts += try await self.claim(
                    endpoint: endpoint,
                    limit: limit,
                    held: held[endpoint.id] ?? [],
                    on: db
                )
            }
            return (recovered, result)
        }
        let recordedSent = zip(endedSent, result.recorded).flatMap { batch, recorded in
            recorded.recorded ? batch.1 : []
        }
        for (outcome, delivery) in ended + recordedSent {
            let ended: WebhookAttemptOutcome =
                switch delivery.state {
                case .delivered: .delivered
                case .deadLettered: .deadLettered
                case .pending: .failed
                }
            metrics.webhookAttempt(ended, duration: outcome.answer.duration)
            if !outcome.answer.isDelivered {
                logger.info(
                    "webhook delivery \(delivery.id) (\(delivery.eventType.rawValue)) to \(outcome.attempt.endpoint.id): attempt \(delivery.attempts) \(ended.rawValue): \(outcome.answer.error ?? "")"
                )
            }
        }
        for endpointId in recovered {
            logger.notice("webhook endpoint \(endpointId) answers again: its waiting deliveries are due now")
        }
        if !recovered.isEmpty { jobs.wake(.delivery) }
        return result
    }

    /// Records attempts in `db`'s transaction; answers the endpoints that answer again after failures and had
    /// deliveries waiting for their back-off (due now).
    private func record(
        _ ended: [(Outcome, WebhookDeliveryRecord)],
        notingSuccessOf succeeded: Set<String>,
        now: Int64,
        on db: any SQLDatabase
    ) async throws -> [String] {
        var delivered: [String] = []
        for (outcome, delivery) in ended {
            let answer = outcome.answer
            if answer.isDelivered {
                // The attempt that delivers is the delivery's last attempt; failures are kept one by one.
                try await store.markDelivered(delivery, on: db)
                delivered.append(delivery.id)
                continue
            }
            try await store.insert(Self.attemptRecord(outcome, delivery, now: now), on: db)
            try await store.update(delivery, on: db)
            if delivery.state == .deadLettered {
                try await jobs.deadLetter(.delivery, key: delivery.id, error: answer.error, on: db)
            } else {
                try await jobs.retry(
                    .delivery,
                    key: delivery.id,
                    at: delivery.nextAttemptAt ?? now,
                    error: answer.error,
                    on: db
                )
            }
            try await store.webhookEndpointFailed(id: outcome.attempt.endpoint.id, at: now, on: db)
        }
        try await jobs.finish(.delivery, keys: delivered, on: db)
        var recovered: [String] = []
        for endpointId in succeeded.sorted()
        where try await store.webhookEndpointSucceeded(id: endpointId, at: now, on: db) {
            // It answers again: what waited for its back-off is due now.
            if try await store.bringDeliveriesForward(endpointId: endpointId, at: now, on: db) > 0 {
                recovered.append(endpointId)
            }
        }
        return recovered
    }

    /// The delivery as an attempt's answer leaves it.
    private func delivery(after outcome: Outcome, now: Int64) -> WebhookDeliveryRecord {
        let answer = outcome.answer
        var delivery = outcome.attempt.delivery
        delivery.attempts = max(delivery.attempts, outcome.attempt.number)
        delivery.updatedAt = now
        delivery.lastAttemptAt = now
        delivery.lastStatus = answer.status
        delivery.lastAnswer = answer.answer
        delivery.lastError = answer.error
        delivery.lastUrl = answer.url
        delivery.lastDuration = answer.duration.milliseconds
        if answer.isDelivered {
            delivery.state = .delivered
            delivery.deliveredAt = now
        } else {
            let next = now + settings.retrySchedule.delay(afterAttempt: delivery.attempts).milliseconds
            if next > delivery.deadline {
                delivery.state = .deadLettered
            } else {
                delivery.nextAttemptAt = next
            }
        }
        return delivery
    }

    /// Dead-letters the deliveries whose deadline passed while their endpoint kept failing; answers how many.
    func deadLetterExpired() async throws -> Int {
        let now = clock.milliseconds
        return try await database.transaction(bookkeeping: true) { db in
            try await self.store.deadLetterExpiredDeliveries(at: now, on: db).count
        }
    }

    // MARK: Replays

    /// Queues the event again (`eventId`), or every event of the app recorded at or after `since` that the endpoint
    /// takes; an event whose delivery to it is still pending is not queued twice. Answers how many were queued.
    public func replay(bundleId: String, endpointId: String, _ request: Components.Schemas.WebhookReplayRequest)
        async throws -> Int
    {
        let endpoint = try await endpoints.record(bundleId: bundleId, id: endpointId, on: store.sql)
        let now = clock.milliseconds
        let deadline = now + settings.retryFor.milliseconds
        var queued = 0
        switch (request.eventId, request.since) {
        case (.some(let eventId), nil):
            guard let event = try await store.eventStore.event(bundleId: bundleId, id: eventId, on: store.sql) else {
                throw WebhookRefusal(.eventNotFound, "\(bundleId) has no event \(eventId)")
            }
            queued = try await database.transaction { db -> Int in
                guard
                    try await !self.store.hasPendingDelivery(
                        endpointId: endpointId,
                        eventSequence: event.sequence,
                        on: db
                    )
                else { return 0 }
                try await self.queue(event, to: endpoint, replay: true, deadline: deadline, now: now, on: db)
                return 1
            }
        case (nil, .some(let since)):
            guard
                var after = try await store.eventStore.firstEventSequence(
                    bundleId: bundleId,
                    recordedSince: since,
                    on: store.sql
                )
            else { return 0 }
            after -= 1
            while true {
                let events = try await store.eventStore.events(
                    after: after,
                    limit: Self.dispatchBatch,
                    bundleId: bundleId,
                    customerIds: nil,
                    type: nil,
                    on: store.sql
                )
                guard let last = events.last else { break }
                queued += try await database.transaction { db -> Int in
                    var count = 0
                    for event in events where delivers(event.type, isImport: event.source == ._import, to: endpoint) {
                        if try await self.store.hasPendingDelivery(
                            endpointId: endpointId,
                            eventSequence: event.sequence,
                            on: db
                        ) {
                            continue
                        }
                        try await self.queue(event, to: endpoint, replay: true, deadline: deadline, now: now, on: db)
                        count += 1
                    }
                    return count
                }
                after = last.sequence
            }
        default:
            throw WebhookRefusal(.invalidReplay, "give exactly one of eventId and since")
        }
        jobs.wake(.delivery)
        logger.notice("webhook endpoint \(endpointId) of \(bundleId): \(queued) deliveries replayed")
        return queued
    }
}

/// When each endpoint's last success was written: at most once a second.
final class SuccessTimes: Sendable {
    private let written = Mutex<[String: Int64]>([:])

    /// Whether a success at `now` should be written (and notes that it will be).
    func due(_ endpoint: String, at now: Int64) -> Bool {
        written.withLock { written in
            if let last = written[endpoint], now - last < 1000 { return false }
            written[endpoint] = now
            return true
        }
    }
}
