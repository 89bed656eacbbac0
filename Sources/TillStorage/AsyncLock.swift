import Synchronization

/// A first-come, first-served lock for async code: waiters suspend instead of blocking a thread.
///
/// SQLite has one writer at a time. Serialising this process's writes here, instead of in SQLite's busy
/// handler, means no write sleeps in back-off and no thread (statements run on the caller's) is held
/// waiting for a lock whose owner needs a thread to commit. An uncontended lock costs a mutex, not a
/// hop to an actor's executor.
public final class AsyncLock: Sendable {
    private struct State {
        var locked = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    public init() {}

    public func lock() async {
        let acquired = state.withLock { state -> Bool in
            guard !state.locked else { return false }
            state.locked = true
            return true
        }
        if acquired { return }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                guard state.locked else {
                    state.locked = true
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
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.locked = false
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
