import Foundation
import Logging
import ServiceLifecycle

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Makes a graceful stop end, whatever the process is waiting for: once SIGTERM (or SIGINT) starts the stop, a
/// thread of its own exits the process `limit` later if it is still running. A database that went away during the
/// stop, a connection that never times out or a thread stuck in a call cannot keep `till serve` alive: an operator's
/// SIGTERM, a container's stop and a deploy all rely on it.
///
/// A thread, not a task: the tasks being waited for may hold every thread of the cooperative pool. It goes last in
/// the service group, so that it hears of the stop first.
struct ShutdownWatchdog: Service {
    let limit: Duration
    let logger: Logger

    func run() async throws {
        // Returns when the group starts its graceful shutdown (or is cancelled).
        try? await gracefulShutdown()
        let limit = limit
        let logger = logger
        let thread = Thread {
            Thread.sleep(forTimeInterval: Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18)
            logger.critical("the stop did not finish within \(limit): exiting now")
            exit(1)
        }
        thread.name = "till-shutdown-watchdog"
        thread.start()
    }
}
