import Logging
import ServiceLifecycle
import Synchronization
import TillHTTPKit

/// What one kind of job needs from the job runner (`JobRunner`), told by the room that owns the kind: how many
/// attempts may start now, how to claim them with what they need, and the attempt itself.
package protocol JobHandler: Sendable {
    /// What a claim hands to an attempt: the claimed job and what the room read with it (a submission, a request).
    associatedtype Claimed: Sendable

    /// The kind of job handled.
    var kind: JobKind { get }

    /// The longest wait for work without a signal: another process sharing the database may have queued a job.
    var longestWait: Duration { get }

    /// How many attempts may start now, with `running` under way: the kind's concurrency, less what a pacer holds
    /// back. `.claim(0)` waits for work or for an attempt to end.
    func room(running: Int) -> JobRoom

    /// The shortest time from one claim to the next: a claim is a write transaction, so a busy kind claims in
    /// batches rather than once for every job queued and every attempt ended.
    func claimInterval() -> Duration

    /// Claims up to `limit` due jobs of the kind (`JobQueue.claim`), with what their attempts need. A job with
    /// nothing left to do is finished here and not handed out.
    func claim(limit: Int) async throws -> [Claimed]

    /// A claim of up to `asked` handed `claimed` (none when it failed), with `running` under way before it.
    func claimed(_ claimed: [Claimed], asked: Int, running: Int)

    /// Where an attempt runs: the executor of the connection it will use (a webhook endpoint's event loop), or nil
    /// for the default.
    func executor(for claimed: Claimed) -> (any TaskExecutor)?

    /// One attempt. Its outcome ends the job's attempt in the transaction that records it (`JobQueue.finish`,
    /// `retry`, `deadLetter`): the attempt's own, or the next claim's where the handler records outcomes in batches
    /// (the webhooks'). What fails in it is the attempt's to record or log; a job left claimed is claimed again when
    /// its lease lapses.
    func run(_ claimed: Claimed) async
}

extension JobHandler {
    package func claimInterval() -> Duration { .zero }
    package func claimed(_ claimed: [Claimed], asked: Int, running: Int) {}
    package func executor(for claimed: Claimed) -> (any TaskExecutor)? { nil }
}

/// How many attempts of a kind may start now.
package enum JobRoom: Sendable, Equatable {
    /// Up to this many (zero: none until an attempt ends or work comes).
    case claim(Int)
    /// None before this long has passed (a pacer's next turn).
    case wait(Duration)
    /// None, but a claim with a limit of zero is due all the same: the handler's claim does more than claim (the
    /// webhooks' round records what ended, dispatches and renews its holds while every attempt's slot is taken).
    case keepUp
}

/// The one loop that runs jobs, for every kind, each through its room's `JobHandler` (confirmations, consumption
/// answers, catch-up, webhook deliveries): it claims what is due as far as the handler gives room, at most once per
/// claim interval, runs each claimed job as a task of its own (so a slow answer holds up only its own attempt), and
/// claims again while claims come back full, else waits for a signal (`JobQueue.wake`: a job queued, an attempt
/// ended), the next due job (when nothing is under way), or `longestWait`. A claim that fails is logged and tried
/// again after `longestWait`.
///
/// A graceful shutdown stops the claims; the attempts under way finish (the runner waits for them), and what is
/// left waits in the database for the next start (a claim of a process that stopped lapses). Cancelling the runner
/// cancels its attempts.
///
/// A handler may make a claim more than a claim: the webhooks' records the attempts that ended and claims the next in
/// one transaction, per endpoint, and sends an endpoint's newest events before any job is written (`WebhookAttempts`).
package struct JobRunner<Handler: JobHandler>: Sendable {
    package let queue: JobQueue
    package let handler: Handler
    package let logger: Logger

    package init(queue: JobQueue, handler: Handler, logger: Logger) {
        self.queue = queue
        self.handler = handler
        self.logger = logger
    }

    /// Runs the kind's jobs until a graceful shutdown or cancellation, then waits for the attempts under way.
    package func run() async {
        let kind = handler.kind
        let running = InFlightCount()
        let attempts = Attempts()
        let clock = ContinuousClock()
        var lastClaim: ContinuousClock.Instant? = nil
        // A claim that fails (storage down, a full disk) is logged once, and again only when its error changes or a
        // minute has passed; the next claim waits `longestWait`, not the claim interval.
        var lastFailure: (message: String, at: ContinuousClock.Instant)? = nil
        await withTaskCancellationHandler {
            while !Task.isShuttingDownGracefully && !Task.isCancelled {
                let since = queue.signal(kind).current
                let before = running.value
                let allowed = handler.room(running: before)
                let limit: Int
                switch allowed {
                case .wait(let delay):
                    _ = try? await cancelWhenGracefulShutdown { try await Task.sleep(for: delay) }
                    continue
                case .claim(let room) where room > 0:
                    limit = room
                case .keepUp:
                    limit = 0
                case .claim:
                    // No room: an attempt's end (or, after `longestWait`, another process's job) changes that.
                    await cancelWhenGracefulShutdown {
                        await queue.waitForWork(kind, since: since, longest: handler.longestWait, untilDue: false)
                    }
                    continue
                }
                if let lastClaim {
                    let due = lastClaim + handler.claimInterval()
                    if due > clock.now {
                        _ = try? await cancelWhenGracefulShutdown { try await Task.sleep(until: due, clock: clock) }
                    }
                }
                guard !Task.isShuttingDownGracefully && !Task.isCancelled else { break }
                lastClaim = clock.now
                var claimed: [Handler.Claimed] = []
                var failed = false
                do {
                    claimed = try await handler.claim(limit: limit)
                    lastFailure = nil
                } catch {
                    failed = true
                    let message = "\(error)"
                    if lastFailure?.message != message || clock.now - (lastFailure?.at ?? clock.now) >= .seconds(60) {
                        logger.error("\(kind.rawValue) jobs: the queue could not be claimed from: \(message)")
                        lastFailure = (message, clock.now)
                    }
                }
                handler.claimed(claimed, asked: limit, running: before)
                for job in claimed {
                    running.add(1)
                    attempts.start(on: handler.executor(for: job)) {
                        await handler.run(job)
                        running.add(-1)
                        queue.wake(kind)
                    }
                }
                if failed {
                    _ = try? await cancelWhenGracefulShutdown { try await Task.sleep(for: handler.longestWait) }
                    continue
                }
                // A full claim: more may be due; claim again once there is room (after the claim interval).
                if limit > 0 && claimed.count == limit { continue }
                // While attempts run, their ends wake the loop (and `longestWait` bounds the wait): the next due time
                // is read only by a runner with nothing under way.
                let idle = running.value == 0
                await cancelWhenGracefulShutdown {
                    await queue.waitForWork(kind, since: since, longest: handler.longestWait, untilDue: idle)
                }
            }
            await attempts.ended()
        } onCancel: {
            attempts.cancel()
        }
    }
}

/// The attempts a runner started, each a task of its own, until they end. Not a task group: Swift 6.3's task group
/// keeps its children in a singly linked list and walks it to remove each one that ends, under its parent's lock,
/// and a runner's thousands of confirmations waiting for Apple end in any order (`TaskGroup::removeChildTask` and its
/// lock were about 3% of the CPU of confirming with Apple answering in 3 to 6 s; perf, docs/benchmarks.md).
final class Attempts: Sendable {
    private struct State {
        var tasks: [Int: Task<Void, Never>] = [:]
        var next = 0
        var cancelled = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Starts `attempt` on `executor` (nil: the default), cancelled at once when the runner is.
    func start(on executor: (any TaskExecutor)?, _ attempt: @escaping @Sendable () async -> Void) {
        state.withLock { state in
            let id = state.next
            state.next += 1
            let task = Task(executorPreference: executor) {
                await attempt()
                self.remove(id)
            }
            state.tasks[id] = task
            if state.cancelled { task.cancel() }
        }
    }

    private func remove(_ id: Int) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.tasks[id] = nil
            guard state.tasks.isEmpty else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once every attempt started has ended.
    func ended() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state in
                if state.tasks.isEmpty { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// Cancels every attempt under way, and any started after.
    func cancel() {
        let tasks = state.withLock { state in
            state.cancelled = true
            return Array(state.tasks.values)
        }
        for task in tasks { task.cancel() }
    }
}

/// A count shared by a loop and the tasks it starts.
package final class InFlightCount: Sendable {
    private let count = Mutex(0)
    package init() {}
    package var value: Int { count.withLock { $0 } }
    package func add(_ delta: Int) { count.withLock { $0 += delta } }
}
