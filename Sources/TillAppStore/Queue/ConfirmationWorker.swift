import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import SQLKit
import ServiceLifecycle
import Synchronization
import TillCatalogue
import TillCore
import TillFormats
import TillHTTPKit
import TillLedger
import TillStorage

/// Confirms submissions with Apple in the background: many at once (Apple takes seconds), bounded.
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
        let inFlight = InFlightCount()
        let clock = ContinuousClock()
        // Claiming is a write transaction: at most one per interval, each taking everything due that fits,
        // rather than one for every submission and every finished attempt (thousands a second under load,
        // all queueing for SQLite's single writer). Apple takes seconds; a few milliseconds here cost nothing.
        let claimInterval = Duration.milliseconds(20)
        var lastClaim = clock.now - claimInterval
        // While Apple is unavailable, one attempt at a time probes it, once a second: hammering a dead endpoint
        // with every due submission (each failing at once and rescheduled) costs the CPU that acknowledging
        // new purchases needs. The first real answer lets everything through again (`appleIsBack()`).
        let probeInterval = Duration.seconds(1)
        // New attempts use the CPU that acknowledgements leave (see ConfirmationPacer).
        let pacer = settings.pacing ? queue.pacer : nil
        let probe = pacer.map { pacer in Task { await pacer.run() } }
        defer { probe?.cancel() }
        await withDiscardingTaskGroup { group in
            while !Task.isShuttingDownGracefully && !Task.isCancelled {
                let since = queue.signals.workAvailable.current
                let probing = queue.appleUnavailable.withLock { $0 }
                let limit = probing ? 1 : queue.recoveryLimit(settings.concurrency)
                var room = limit - inFlight.value
                let paced = probing ? nil : pacer
                if room > 0, let paced {
                    let granted = paced.take(room)
                    if granted == 0 {
                        try? await Task.sleep(for: min(paced.untilNext(), claimInterval))
                        continue
                    }
                    room = granted
                }
                if room > 0 {
                    let due = lastClaim + (probing ? probeInterval : claimInterval)
                    if due > clock.now { try? await Task.sleep(until: due, clock: clock) }
                    lastClaim = clock.now
                    let claimed = (try? await queue.claimDueSubmissions(limit: room, lease: lease)) ?? []
                    if let paced, let oldest = claimed.map(\.dueAt).min() {
                        paced.observe(lateness: .milliseconds(max(0, queue.clock.milliseconds - oldest)))
                    }
                    if let paced {
                        paced.refund(room - claimed.count)
                        if claimed.count == room && room < limit - inFlight.value { paced.limited() }
                    }
                    for submission in claimed {
                        inFlight.add(1)
                        group.addTask {
                            await queue.confirm(submission, client: client, pacer: paced)
                            inFlight.add(-1)
                            queue.signals.workAvailable.signal()
                        }
                    }
                    if claimed.count == room { continue }  // more may be due: claim again once there is room
                }
                await queue.signals.workAvailable.wait(since: since, timeout: .milliseconds(250))
            }
            // Graceful shutdown: attempts under way finish (the group waits for them); the rest waits for the next start.
        }
        try? await http.shutdown()
    }
}

/// A count shared by a loop and the tasks it starts.
final class InFlightCount: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func add(_ delta: Int) { count.withLock { $0 += delta } }
}
