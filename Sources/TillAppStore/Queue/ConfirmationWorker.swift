import NIOCore
import ServiceLifecycle
import Synchronization
import TillHTTPKit
import TillJobs
import TillLedger
import Tracing

/// Confirms submissions with Apple in the background, on the job runner (`ConfirmationAttempts`), with a client of its
/// own and the pacer's probe of the CPU.
public struct ConfirmationWorker: Service {
    let queue: ConfirmationQueue

    package init(queue: ConfirmationQueue) {
        self.queue = queue
    }

    public func run() async throws {
        let settings = queue.configuration.confirmation
        // Apple takes seconds per answer: one connection per confirmation in flight, or the pool's default
        // of 8 connections a host would cap the worker at a few confirmations a second.
        let client = AppleClient(
            endpoints: queue.configuration.apple,
            timeout: settings.requestTimeout,
            metrics: queue.metrics,
            connectionsPerHost: settings.concurrency
        )
        // A claim outlives the slowest attempt (up to three calls to Apple, each answer waiting its turn at the
        // pacer); a worker that dies loses its claims when they lapse. A claim that lapses while its attempt runs
        // counts one attempt more (the job's count is the submission's), so the lease is not cut short.
        let lease = settings.requestTimeout * 4 + queue.pacer.settings.longestAnswerWait * 3 + .seconds(30)
        // New attempts use the CPU that acknowledgements leave (see ConfirmationPacer).
        let pacer = settings.pacing ? queue.pacer : nil
        let probe = pacer.map { pacer in Task { await pacer.run() } }
        defer { probe?.cancel() }
        let attempts = ConfirmationAttempts(queue: queue, client: client, pacer: pacer, lease: lease)
        // Graceful shutdown: attempts under way finish; the rest waits for the next start.
        await JobRunner(queue: queue.jobs, handler: attempts, logger: queue.logger).run()
        await client.shutdown()
    }
}

/// The confirmation queue's jobs as the job runner runs them: many at once (Apple takes seconds), bounded by the
/// concurrency, by the recovery after an outage and by the pacer.
final class ConfirmationAttempts: JobHandler {
    /// A submission claimed, and whether its attempt's answers wait their turn at the pacer (not while probing).
    struct Claimed: Sendable {
        var submission: ConfirmationQueue.ClaimedSubmission
        var paced: Bool
    }

    let queue: ConfirmationQueue
    let client: AppleClient
    let pacer: ConfirmationPacer?
    let lease: Duration
    /// Whether the round under way probes a dead Apple, as `room` found it: the claim, its pacer's refund and its
    /// attempts go by that, whatever Apple does meanwhile.
    private let probingRound = Mutex(false)

    init(queue: ConfirmationQueue, client: AppleClient, pacer: ConfirmationPacer?, lease: Duration) {
        self.queue = queue
        self.client = client
        self.pacer = pacer
        self.lease = lease
    }

    var kind: JobKind { .confirmation }
    var longestWait: Duration { .milliseconds(250) }

    /// While Apple is unavailable, one attempt at a time probes it, once a second: hammering a dead endpoint with
    /// every due submission (each failing at once and rescheduled) costs the CPU that acknowledging new purchases
    /// needs. The first real answer lets everything through again (`appleIsBack()`).
    private func limit(probing: Bool) -> Int {
        probing ? 1 : queue.recoveryLimit(queue.configuration.confirmation.concurrency)
    }

    /// The pacer of this round's attempts: none while probing, or with pacing off.
    private var roundPacer: ConfirmationPacer? { probingRound.withLock { $0 } ? nil : pacer }

    func room(running: Int) -> JobRoom {
        let probing = queue.appleUnavailable.withLock { $0 }
        probingRound.withLock { $0 = probing }
        let room = limit(probing: probing) - running
        guard room > 0, let pacer = roundPacer else { return .claim(max(0, room)) }
        let granted = pacer.take(room)
        return granted == 0 ? .wait(min(pacer.untilNext(), claimInterval())) : .claim(granted)
    }

    /// Claiming is a write transaction: at most one per interval, each taking everything due that fits, rather than
    /// one for every submission and every finished attempt (thousands a second under load, all queueing for SQLite's
    /// single writer). Apple takes seconds; a few milliseconds here cost nothing.
    func claimInterval() -> Duration { probingRound.withLock { $0 } ? .seconds(1) : .milliseconds(20) }

    func claim(limit: Int) async throws -> [Claimed] {
        let paced = roundPacer != nil
        return try await queue.claimDueSubmissions(limit: limit, lease: lease).map {
            Claimed(submission: $0, paced: paced)
        }
    }

    func claimed(_ claimed: [Claimed], asked: Int, running: Int) {
        guard let pacer = roundPacer else { return }
        if let oldest = claimed.map(\.submission.dueAt).min() {
            pacer.observe(lateness: .milliseconds(max(0, queue.clock.milliseconds - oldest)))
        }
        pacer.refund(asked - claimed.count)
        // All the pacer granted was due, and it granted less than there was room for.
        if claimed.count == asked && asked < limit(probing: false) - running { pacer.limited() }
    }

    /// One attempt, in a span that continues the submission's trace: the calls to Apple are its children.
    func run(_ claimed: Claimed) async {
        let submission = claimed.submission
        await Traces.withSpan("confirmation", continuing: submission.trace, ofKind: .consumer) { span in
            if span.isRecording {
                span.attributes["till.bundle_id"] = submission.record.bundleId
                span.attributes["till.customer_id"] = submission.record.customerId
                span.attributes["till.submission_id"] = submission.record.id
                span.attributes["till.transaction_ids"] = submission.record.transactionIds.ids
                span.attributes["till.attempt"] = submission.attempt
            }
            await queue.confirm(submission, client: client, pacer: claimed.paced ? pacer : nil)
        }
    }
}
