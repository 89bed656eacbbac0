import Synchronization

/// A level-triggered wake-up for background loops and waiters. `signal()` wakes every task waiting now, and a
/// waiter that read `current` before a signal returns at once, so a signal between looking for work and waiting is
/// never lost.
///
/// Waiters sleep on continuations, not on a polling timer: a signal resumes them at once and an idle loop costs
/// nothing until its timeout.
public final class Wakeup: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// Wakes every current waiter. Cheap when no one waits (one lock, one increment): it is called on hot paths.
    public func signal() {
        let waiters = state.withLock { state in
            state.generation &+= 1
            guard !state.waiters.isEmpty else { return [UInt64: CheckedContinuation<Void, Never>]() }
            defer { state.waiters.removeAll(keepingCapacity: true) }
            return state.waiters
        }
        for waiter in waiters.values { waiter.resume() }
    }

    /// The number of signals so far; pass it to `wait(since:timeout:)`.
    public var current: UInt64 { state.withLock { $0.generation } }

    /// Why a wait ended.
    public enum Outcome: Sendable, Hashable {
        /// A signal came after `since`.
        case signalled
        /// The timeout passed first.
        case timedOut
        /// The waiting task was cancelled.
        case cancelled
    }

    /// Returns once signalled after `since` (at once if that already happened), after `timeout`, or when the task
    /// is cancelled; says which.
    @discardableResult
    public func wait(since: UInt64, timeout: Duration) async -> Outcome {
        if current != since { return .signalled }
        if Task.isCancelled { return .cancelled }
        return await withTaskGroup(of: Outcome.self) { group in
            group.addTask { await self.signalled(since: since) ? .signalled : .cancelled }
            group.addTask {
                do {
                    try await Task.sleep(for: timeout)
                    return .timedOut
                } catch {
                    return .cancelled
                }
            }
            let first = await group.next() ?? .cancelled
            group.cancelAll()
            return first
        }
    }

    /// Returns true once signalled after `since`, false when cancelled first.
    private func signalled(since: UInt64) async -> Bool {
        let id = state.withLock { state in
            defer { state.nextWaiter &+= 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    // Cancelled before the continuation was stored: the handler below found nothing to resume.
                    if state.generation != since || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
        return current != since
    }
}
