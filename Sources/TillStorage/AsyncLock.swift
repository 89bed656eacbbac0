import Synchronization

/// A first-come, first-served lock for async code: waiters suspend instead of blocking a thread.
///
/// SQLite has one writer at a time. Serialising this process's writes here, instead of in SQLite's busy
/// handler, means no write sleeps in back-off and no thread (statements run on the caller's) is held
/// waiting for a lock whose owner needs a thread to commit. An uncontended lock costs a mutex, not a
/// hop to an actor's executor.
///
/// It also counts how long it has been held (`busy`): for SQLite's write lock, the share of time the one writer
/// works, which says whether a queue of writes comes from the writer's capacity or from elsewhere (`till bench
/// submissions` prints it).
public final class AsyncLock: Sendable {
    private struct State {
        var locked = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// When the lock was last taken while free (passing it to a waiter keeps it held), and the time it was held
        /// before that.
        var heldSince: ContinuousClock.Instant?
        var held: Duration = .zero
    }

    private let state = Mutex(State())
    private static let clock = ContinuousClock()

    public init() {}

    /// How long the lock has been held since it was made, the present holding included.
    public var busy: Duration {
        // The time read under the mutex: a holding that began after it was read would count as negative.
        state.withLock { state in state.held + (state.heldSince.map { Self.clock.now - $0 } ?? .zero) }
    }

    public func lock() async {
        let now = Self.clock.now
        let acquired = state.withLock { state -> Bool in
            guard !state.locked else { return false }
            state.locked = true
            state.heldSince = now
            return true
        }
        if acquired { return }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                guard state.locked else {
                    state.locked = true
                    state.heldSince = Self.clock.now
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    public func unlock() {
        // The lock passes straight to the first waiter: it stays locked.
        let now = Self.clock.now
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.locked = false
                if let since = state.heldSince { state.held += now - since }
                state.heldSince = nil
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }

    /// Runs `body` holding the lock.
    func withLock<Result: Sendable>(_ body: @Sendable () async throws -> Result) async rethrows -> Result {
        await lock()
        defer { unlock() }
        return try await body()
    }
}
