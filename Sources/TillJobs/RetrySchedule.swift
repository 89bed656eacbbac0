import Foundation
import TillLedger

/// When a job's next attempt comes after a failed one: the one back-off of durable work. Confirmations and consumption
/// answers double a delay up to a cap (``ConfirmationSettings``); webhook deliveries follow Standard Webhooks' steps,
/// the last one repeated (``WebhookSettings``). Each delay is jittered, so that jobs that failed together (an outage)
/// do not all come back at once.
public struct RetrySchedule: Sendable, Hashable {
    public enum Delays: Sendable, Hashable {
        /// `base × 2^(attempt-1)`, at most `cap`.
        case doubling(base: Duration, cap: Duration)
        /// The n-th delay after the n-th attempt, the last one repeated.
        case steps([Duration])
    }

    public var delays: Delays
    /// How far a delay may move either way, as a share of it (0.2: ±20%).
    public var jitter: Double

    public init(_ delays: Delays, jitter: Double) {
        self.delays = delays
        self.jitter = max(0, min(1, jitter))
    }

    /// The delay after attempt `attempt` (1 for the first), before jitter.
    public func plainDelay(afterAttempt attempt: Int) -> Duration {
        .milliseconds(Int64(plainSeconds(afterAttempt: attempt) * 1000))
    }

    /// The delay after attempt `attempt`, jittered: `factor` (by default a random one within ±`jitter`) times it, in
    /// whole milliseconds.
    public func delay(afterAttempt attempt: Int, factor: Double? = nil) -> Duration {
        let factor = factor ?? Double.random(in: (1 - jitter)...(1 + jitter))
        return .milliseconds(Int64(plainSeconds(afterAttempt: attempt) * factor * 1000))
    }

    private func plainSeconds(afterAttempt attempt: Int) -> Double {
        switch delays {
        case .doubling(let base, let cap):
            return min(cap.seconds, base.seconds * pow(2, Double(max(0, attempt - 1))))
        case .steps(let steps):
            guard !steps.isEmpty else { return 0 }
            return steps[min(max(0, attempt - 1), steps.count - 1)].seconds
        }
    }
}

extension Duration {
    /// The duration in seconds, with its fraction.
    fileprivate var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
