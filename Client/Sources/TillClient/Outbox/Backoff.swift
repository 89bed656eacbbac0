/// How long to wait before sending a failed submission again: `base` seconds doubled per failed attempt up to `cap`,
/// each delay shortened by up to `jitter` of itself so that many devices do not come back in step.
public struct Backoff: Sendable, Hashable {
    /// Seconds.
    public var base: Double
    /// Seconds.
    public var cap: Double
    /// A fraction, 0 to 1.
    public var jitter: Double

    public init(base: Double = 2, cap: Double = 300, jitter: Double = 0.2) {
        self.base = base
        self.cap = cap
        self.jitter = min(max(jitter, 0), 1)
    }

    /// The delay in seconds after `attempts` failed attempts (1 or more).
    public func delay(afterAttempts attempts: Int) -> Double {
        let exponent = min(max(attempts - 1, 0), 30)
        var delay = base * Double(1 << exponent)
        if delay > cap || delay < 0 { delay = cap }
        if jitter > 0 { delay = delay * (1 - Double.random(in: 0...jitter)) }
        return delay
    }
}
