import Synchronization
import TillLedger

/// A short-lived cache of things read on every request and written rarely: apps by key, catalogues, customers.
///
/// An entry is kept for `lifetime` at most, which bounds how stale another process's change can look when
/// several servers share one PostgreSQL database. This process's own changes are seen at once, in one of
/// two ways:
/// - `invalidateAll()`, called after a change (apps, catalogue);
/// - a generation passed with each read (`TillDatabase.writeGeneration`): an entry is only used while the
///   generation it was read under is still the current one, so any write transaction retires it.
/// A load that overlaps an invalidation is not kept, so a reader never puts back what a writer replaced.
package final class SnapshotCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Entry {
        var value: Value
        var expires: ContinuousClock.Instant
        var generation: UInt64
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var invalidations: UInt64 = 0
    }

    private let state = Mutex(State())
    private let lifetime: Duration
    private let capacity: Int

    package init(lifetime: Duration, capacity: Int = 50_000) {
        self.lifetime = lifetime
        self.capacity = capacity
    }

    /// - Parameter isStale: a cached value it returns true for is loaded again (a value that knows it changes
    ///   at some time, such as entitlements that end).
    package func value(
        for key: Key,
        generation: UInt64 = 0,
        isStale: (Value) -> Bool = { _ in false },
        load: () async throws -> Value
    ) async throws -> Value {
        let now = ContinuousClock.now
        let (cached, invalidations) = state.withLock { state in
            let entry = state.entries[key]
            let fresh = entry.flatMap { $0.expires > now && $0.generation == generation ? $0.value : nil }
            return (fresh, state.invalidations)
        }
        if let cached, !isStale(cached) { return cached }
        let value = try await load()
        state.withLock { state in
            guard state.invalidations == invalidations else { return }
            if state.entries.count >= capacity { state.entries.removeAll(keepingCapacity: true) }
            state.entries[key] = Entry(value: value, expires: now + lifetime, generation: generation)
        }
        return value
    }

    package func invalidateAll() {
        state.withLock { state in
            state.entries.removeAll()
            state.invalidations &+= 1
        }
    }
}
