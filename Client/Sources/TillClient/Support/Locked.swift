import Foundation

/// A value behind a lock, shared between threads.
///
/// Hand-written rather than Synchronization's `Mutex`, which needs iOS 18 and macOS 15: TillClient runs from iOS 15
/// and macOS 12 (docs/client.md), where `NSLock` is what there is.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    /// Runs `body` with the value, holding the lock; `body` must not wait for anything.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
