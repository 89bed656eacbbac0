import Synchronization

/// A small thread-safe cache keyed by bytes (certificate chains, JWS headers), emptied when full so that
/// hostile input cannot grow it without bound.
final class BoundedCache<Value: Sendable>: Sendable {
    private let entries: Mutex<[BytesKey: Value]>
    private let capacity: Int

    init(capacity: Int = 64) {
        self.capacity = capacity
        self.entries = Mutex([:])
    }

    subscript(key: BytesKey) -> Value? {
        get { entries.withLock { $0[key] } }
        set {
            entries.withLock { entries in
                if entries.count >= capacity, entries[key] == nil { entries.removeAll(keepingCapacity: true) }
                entries[key] = newValue
            }
        }
    }

    /// Changes an entry in place, if it is still there.
    func update(_ key: BytesKey, _ change: (inout Value) -> Void) {
        entries.withLock { entries in
            if var value = entries[key] {
                change(&value)
                entries[key] = value
            }
        }
    }
}
