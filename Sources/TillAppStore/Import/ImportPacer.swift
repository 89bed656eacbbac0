import Foundation
import Synchronization
import TillCore

/// Spaces one process's calls to Transaction History for imports, per environment, at the configured rate (Apple's
/// limit is per app and per hour, so an even pace never meets it), and holds every call back while Apple asks to
/// wait (a 429's `Retry-After`).
///
/// Hand-written (a missing feature): swift-async-algorithms has no rate limiter, and none of the mirrored packages
/// waits for a turn.
final class ImportPacer: Sendable {
    private let interval: [AppStoreEnvironment: Duration]
    private let next = Mutex<[AppStoreEnvironment: ContinuousClock.Instant]>([:])

    init(requestsPerSecond: [AppStoreEnvironment: Double]) {
        interval = requestsPerSecond.mapValues { rate in .nanoseconds(Int64(1e9 / max(0.01, rate))) }
    }

    /// Waits for the next turn to call Apple in `environment`. Throws when the task is cancelled (a stop).
    func turn(_ environment: AppStoreEnvironment) async throws {
        let now = ContinuousClock.now
        let interval = self.interval[environment] ?? .milliseconds(25)
        let start = next.withLock { next in
            let start = max(now, next[environment] ?? now)
            next[environment] = start + interval
            return start
        }
        if start > now { try await Task.sleep(until: start, clock: .continuous) }
    }

    /// Apple asked to wait `wait` (a 429): no call in `environment` before then.
    func hold(_ environment: AppStoreEnvironment, for wait: Duration) {
        let until = ContinuousClock.now + wait
        next.withLock { next in next[environment] = max(next[environment] ?? until, until) }
    }
}
