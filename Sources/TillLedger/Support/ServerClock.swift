import Foundation

/// The server's notion of now. Every component reads time through it, so a test moves one clock for all of them.
package struct ServerClock: Sendable {
    package let now: @Sendable () -> Date

    /// Now, in UNIX milliseconds (the unit of every time the server stores).
    package var milliseconds: Int64 { Int64((now().timeIntervalSince1970 * 1000).rounded()) }

    package init(now: @escaping @Sendable () -> Date) {
        self.now = now
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
