#if canImport(Network)
    import Dispatch
    import Network

    // Compiled for real only on Apple platforms. On Linux, CI type-checks this file against a declaration-only
    // stand-in of exactly the Network API it uses (Tests/AppleStandIns, docs/client.md).

    /// The network as `NWPathMonitor` sees it: `true` while a path is satisfied.
    public struct NetworkConnectivity: Connectivity {
        public init() {}

        public func changes() -> AsyncStream<Bool> {
            AsyncStream { continuation in
                let monitor = Monitor()
                monitor.path.pathUpdateHandler = { path in continuation.yield(path.status == .satisfied) }
                continuation.onTermination = { _ in monitor.path.cancel() }
                monitor.path.start(queue: DispatchQueue(label: "till.network"))
            }
        }

        /// The monitor, handed to the stream's end: `NWPathMonitor` is safe to cancel from any thread.
        private final class Monitor: @unchecked Sendable {
            let path = NWPathMonitor()
        }
    }
#endif
