/// A first-come, first-served lock for async code: waiters suspend instead of blocking a thread.
///
/// SQLite has one writer at a time. Serialising this process's write transactions here, instead of in
/// SQLite's busy handler, means no transaction sleeps in back-off and no thread of the SQLite pool is
/// held waiting for a lock whose owner needs a thread to commit.
actor AsyncLock {
    private var locked = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func lock() async {
        if !locked {
            locked = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    func unlock() {
        if waiters.isEmpty {
            locked = false
        } else {
            waiters.removeFirst().resume()
        }
    }

    /// Runs `body` holding the lock.
    nonisolated func withLock<Result: Sendable>(_ body: @Sendable () async throws -> Result) async rethrows -> Result {
        await lock()
        do {
            let result = try await body()
            await unlock()
            return result
        } catch {
            await unlock()
            throw error
        }
    }
}
