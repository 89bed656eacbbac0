import AsyncHTTPClient
import NIOCore
import ServiceLifecycle
import Synchronization
import TillJobs
import TillLedger

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
        var httpConfiguration = HTTPClient.Configuration()
        httpConfiguration.connectionPool = .init(
            idleTimeout: .seconds(60),
            concurrentHTTP1ConnectionsPerHostSoftLimit: settings.concurrency
        )
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
        let client = AppleClient(
            http: http,
            endpoints: queue.configuration.apple,
            timeout: settings.requestTimeout,
            metrics: queue.metrics
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
        try? await http.shutdown()
    }
}

/// The confirmation queue's jobs as the job runner runs them: many at once (Apple takes seconds), bounded by the
/// concurrency, by the recovery after an outage and by the pacer.
struct ConfirmationAttempts: JobHandler {
    let queue: ConfirmationQueue
    let client: AppleClient
    let pacer: ConfirmationPacer?
    let lease: Duration

    var kind: JobKind { .confirmation }
    var longestWait: Duration { .milliseconds(250) }

    /// While Apple is unavailable, one attempt at a time probes it, once a second: hammering a dead endpoint with
    /// every due submission (each failing at once and rescheduled) costs the CPU that acknowledging new purchases
    /// needs. The first real answer lets everything through again (`appleIsBack()`).
    var probing: Bool { queue.appleUnavailable.withLock { $0 } }

    func limit() -> Int { probing ? 1 : queue.recoveryLimit(queue.configuration.confirmation.concurrency) }

    func room(running: Int) -> JobRoom {
        let room = limit() - running
        guard room > 0, !probing, let pacer else { return .claim(max(0, room)) }
        let granted = pacer.take(room)
        return granted == 0 ? .wait(min(pacer.untilNext(), claimInterval())) : .claim(granted)
    }

    /// Claiming is a write transaction: at most one per interval, each taking everything due that fits, rather than
    /// one for every submission and every finished attempt (thousands a second under load, all queueing for SQLite's
    /// single writer). Apple takes seconds; a few milliseconds here cost nothing.
    func claimInterval() -> Duration { probing ? .seconds(1) : .milliseconds(20) }

    func claim(limit: Int) async throws -> [ConfirmationQueue.ClaimedSubmission] {
        try await queue.claimDueSubmissions(limit: limit, lease: lease)
    }

    func claimed(_ claimed: [ConfirmationQueue.ClaimedSubmission], asked: Int, running: Int) {
        guard !probing, let pacer else { return }
        if let oldest = claimed.map(\.dueAt).min() {
            pacer.observe(lateness: .milliseconds(max(0, queue.clock.milliseconds - oldest)))
        }
        pacer.refund(asked - claimed.count)
        // All the pacer granted was due, and it granted less than there was room for.
        if claimed.count == asked && asked < limit() - running { pacer.limited() }
    }

    func run(_ submission: ConfirmationQueue.ClaimedSubmission) async {
        await queue.confirm(submission, client: client, pacer: probing ? nil : pacer)
    }
}
