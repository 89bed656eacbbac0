import Foundation
import TillHTTPKit

/// The server's notion of now. Every component reads time through it, so a test moves one clock for all of them.
package struct ServerClock: Sendable {
    package let now: @Sendable () -> Date

    /// Now, in UNIX milliseconds (the unit of every time the server stores).
    package var milliseconds: Int64 { Int64((now().timeIntervalSince1970 * 1000).rounded()) }

    package init(now: @escaping @Sendable () -> Date) {
        self.now = now
    }
}

/// The confirmation queue's two wake-ups, shared by the components that fill it (intake, a credentials fix in
/// the catalogue, an operator's requeue) and the one that drains it.
package struct QueueSignals: Sendable {
    /// Nudges the confirmation worker when a submission is queued or brought forward: the job queue's wake-up of
    /// its confirmations.
    package let workAvailable: Wakeup
    /// Wakes requests waiting (`?wait=`) for a submission to leave the queue.
    package let submissionSettled = Wakeup()

    package init(workAvailable: Wakeup) {
        self.workAvailable = workAvailable
    }
}

extension Duration {
    /// Whole nanoseconds.
    package var nanoseconds: Int64 {
        components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
    }

    /// Whole milliseconds (the unit of every time the server stores).
    package var milliseconds: Int64 { nanoseconds / 1_000_000 }
}
