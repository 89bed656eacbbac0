import Foundation
import Synchronization
import TillCore
import TillFormats

/// The simulator's notion of now: the real clock plus an offset that the admin API advances, and the
/// rate at which subscription time runs.
public final class SimulatorClock: Sendable {
    private struct State {
        var offsetMilliseconds: Int64
        var rate: RenewalRate
    }

    private let state: Mutex<State>
    private let realNow: @Sendable () -> Date

    public init(
        offsetMilliseconds: Int64 = 0,
        rate: RenewalRate = .monthlyEvery5Minutes,
        realNow: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.state = Mutex(State(offsetMilliseconds: offsetMilliseconds, rate: rate))
        self.realNow = realNow
    }

    /// The simulated current time.
    public func now() -> Date {
        let offset = state.withLock { $0.offsetMilliseconds }
        return realNow().addingTimeInterval(Double(offset) / 1000)
    }

    public var nowMilliseconds: Int64 { now().millisecondsSince1970 }

    public var offsetMilliseconds: Int64 { state.withLock { $0.offsetMilliseconds } }

    public var rate: RenewalRate { state.withLock { $0.rate } }

    func set(rate: RenewalRate) { state.withLock { $0.rate = rate } }

    func set(offsetMilliseconds: Int64) { state.withLock { $0.offsetMilliseconds = offsetMilliseconds } }

    /// Moves simulated time forward; returns the new offset.
    @discardableResult
    func advance(by seconds: Double) -> Int64 {
        state.withLock {
            $0.offsetMilliseconds += Int64(seconds * 1000)
            return $0.offsetMilliseconds
        }
    }
}

extension SimulatorClock {
    /// The clock as the admin API shows it.
    var view: ClockView {
        ClockView(
            now: nowMilliseconds,
            offsetSeconds: Double(offsetMilliseconds) / 1000,
            renewalRate: rate.description,
            monthSeconds: rate.monthSeconds
        )
    }

    /// When a period starting at `start` (milliseconds) ends: accelerated in the sandbox, real in production.
    func expiry(of period: SubscriptionPeriod, from start: Int64, environment: AppStoreEnvironment) -> Int64 {
        let pace = environment == .production ? RenewalRate.realTime : rate
        return pace.end(of: period, from: Date(milliseconds: start)).millisecondsSince1970
    }
}

extension Date {
    init(milliseconds: Int64) { self.init(millisecondsSince1970: milliseconds) }
}
