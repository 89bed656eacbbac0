import Synchronization

/// A small thread-safe cache keyed by bytes (certificate chains, JWS headers), emptied when full so that
/// hostile input cannot grow it without bound.
///
/// The entry used last is checked first by comparing bytes, without hashing or copying the key: a
/// steady stream of data signed by one certificate never reaches the dictionary.
final class BoundedCache<Value: Sendable>: Sendable {
    private struct State {
        var entries: [BytesKey: Value] = [:]
        var last: (key: BytesKey, value: Value)?
    }

    private let state: Mutex<State>
    private let capacity: Int

    init(capacity: Int = 64) {
        self.capacity = capacity
        self.state = Mutex(State())
    }

    /// The entry for `bytes`, looked up without building a key when it is the one used last.
    func lookup(_ bytes: ArraySlice<UInt8>) -> Value? {
        state.withLock { state in
            if let last = state.last, last.key.equals(bytes) { return last.value }
            let key = BytesKey(bytes)
            guard let value = state.entries[key] else { return nil }
            state.last = (key, value)
            return value
        }
    }

    subscript(key: BytesKey) -> Value? {
        get { state.withLock { $0.entries[key] } }
        set {
            state.withLock { state in
                if state.entries.count >= capacity, state.entries[key] == nil {
                    state.entries.removeAll(keepingCapacity: true)
                }
                state.entries[key] = newValue
                state.last = newValue.map { (key, $0) }
            }
        }
    }

    /// Changes an entry in place, if it is still there.
    func update(_ key: BytesKey, _ change: (inout Value) -> Void) {
        state.withLock { state in
            if var value = state.entries[key] {
                change(&value)
                state.entries[key] = value
                state.last = (key, value)
            }
        }
    }
}
