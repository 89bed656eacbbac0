/// How long to wait before sending a failed submission again: `base` doubled per failed attempt up to `cap`,
/// each delay shortened by up to `jitter` of itself so that many devices do not come back in step.
public struct Backoff: Sendable, Hashable {
    public var base: Duration
    public var cap: Duration
    /// A fraction, 0 to 1.
    public var jitter: Double

    public init(base: Duration = .seconds(2), cap: Duration = .seconds(300), jitter: Double = 0.2) {
        self.base = base
        self.cap = cap
        self.jitter = min(max(jitter, 0), 1)
    }

    /// The delay after `attempts` failed attempts (1 or more).
    public func delay(afterAttempts attempts: Int) -> Duration {
        let exponent = min(max(attempts - 1, 0), 30)
        var delay = base * (1 << exponent)
        if delay > cap || delay < .zero { delay = cap }
        if jitter > 0 { delay = delay * (1 - Double.random(in: 0...jitter)) }
        return delay
    }
}
