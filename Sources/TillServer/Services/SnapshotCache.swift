import Synchronization

/// A short-lived cache of things read on every request and written rarely: apps by key, catalogues.
///
/// This process drops an entry the moment it changes it (`invalidateAll`). Another process sharing the
/// database sees the change within `lifetime`. A load that overlaps an invalidation is not kept, so a
/// reader can never put back what a writer has just replaced.
final class SnapshotCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct State {
        var entries: [Key: (value: Value, expires: ContinuousClock.Instant)] = [:]
        var generation: UInt64 = 0
    }

    private let state = Mutex(State())
    private let lifetime: Duration

    init(lifetime: Duration) {
        self.lifetime = lifetime
    }

    func value(for key: Key, load: () async throws -> Value) async throws -> Value {
        let now = ContinuousClock.now
        let (cached, generation) = state.withLock { state in
            (state.entries[key].flatMap { $0.expires > now ? $0.value : nil }, state.generation)
        }
        if let cached { return cached }
        let value = try await load()
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.entries.count > 10_000 { state.entries.removeAll() }
            state.entries[key] = (value, ContinuousClock.now + lifetime)
        }
        return value
    }

    func invalidateAll() {
        state.withLock { state in
            state.entries.removeAll()
            state.generation &+= 1
        }
    }
}
