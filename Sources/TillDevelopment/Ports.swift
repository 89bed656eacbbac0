import Logging
import ServiceLifecycle

/// A service running in the background on a port it chose (or was given), until ``stop()``.
public struct Ports: Sendable {
    public let port: Int
    let group: ServiceGroup
    let task: Task<Void, any Error>

    /// Starts the service `make` builds and answers once it reports its port; throws the service's error when it
    /// stops before listening (the port was taken).
    public static func start<S: Service>(
        _ make: (@escaping @Sendable (Int) async -> Void) -> S,
        logger: Logger
    ) async throws -> Ports {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let service = make { continuation.yield($0) }
        let group = ServiceGroup(
            configuration: .init(services: [service], gracefulShutdownSignals: [], logger: logger)
        )
        let task = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            try await task.value
            throw CancellationError()
        }
        return Ports(port: port, group: group, task: task)
    }

    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }
}
