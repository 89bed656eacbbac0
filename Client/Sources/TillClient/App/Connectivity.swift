/// Tells whether the device can reach the network, each time that changes: what makes the SwiftUI model send its
/// outbox again when the network comes back. ``NetworkConnectivity`` watches `NWPathMonitor` on Apple platforms; a
/// test gives its own.
public protocol Connectivity: Sendable {
    /// `true` when the network is usable, `false` when not: the current state first, then each change, for as long
    /// as the stream is iterated.
    func changes() -> AsyncStream<Bool>
}
