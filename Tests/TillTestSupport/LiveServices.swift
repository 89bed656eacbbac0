import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

/// Runs a service for the duration of `body`, then shuts it down gracefully. An application reports the loopback
/// port it bound (tests bind port 0) through the closure `make` is given; any other service reports 0 at once.
public func withServices<S: Service>(
    _ make: (@escaping @Sendable (Int) async -> Void) -> S,
    _ body: (Int) async throws -> Void
) async throws {
    let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
    let service = make { port in continuation.yield(port) }
    if !(service is any ApplicationProtocol) { continuation.yield(0) }
    try await withThrowingTaskGroup(of: Void.self) { group in
        let serviceGroup = ServiceGroup(
            configuration: .init(services: [service], gracefulShutdownSignals: [], logger: Logger(label: "test"))
        )
        group.addTask { try await serviceGroup.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        do {
            try await body(port)
        } catch {
            await serviceGroup.triggerGracefulShutdown()
            throw error
        }
        await serviceGroup.triggerGracefulShutdown()
        try await group.waitForAll()
    }
}

/// Wraps a service so that one of an opaque type can sit in a `ServiceGroup` beside others.
public struct ServiceBox<S: Service>: Service {
    let service: S
    public init(_ service: S) { self.service = service }
    public func run() async throws { try await service.run() }
}

/// Polls `condition` every 50 ms for up to `timeout` (generous: it returns as soon as the condition holds, and a
/// loaded 2-core runner can be slow); throws when it never holds.
public func waitUntil(timeout: Duration = .seconds(60), _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(50))
    }
    throw ConditionTimedOut(timeout: timeout)
}

/// A condition `waitUntil` polled never held.
public struct ConditionTimedOut: Error, CustomStringConvertible {
    public var timeout: Duration
    public var description: String { "the condition did not hold within \(timeout)" }
}
