import Synchronization

/// Paces the start of confirmation attempts so that they use the CPU that acknowledging purchases leaves.
///
/// A customer waits for the acknowledgement and nobody waits for the confirmation, so under load the
/// confirmations must yield. Apple's latency costs nothing (a confirmation in flight only waits); the
/// work around each call does cost something: the request and its answer, and settling the outcome. At
/// 1,000 purchases a second on two cores, unpaced confirmations took the CPU and acknowledgements queued
/// for seconds.
///
/// The signal is the scheduler's queue: every 10 ms a probe task yields and measures how long it waited to
/// run again. That wait is what every request handler also waits at each step. Every 100 ms the allowed rate
/// of new attempts is adjusted, in the manner of TCP's congestion control:
/// - the longest wait of the window is over `target` (the queue is backing up): the rate is cut to 60%;
/// - otherwise, if the worker used the whole rate (it had more work ready), the rate grows by 25% (and 10/s).
///
/// The rate never falls below `minimum`, so confirmations always move; the backlog left by a burst is
/// confirmed when the burst ends.
final class ConfirmationPacer: Sendable {
    struct Settings: Sendable {
        /// Longest queue wait that still counts as an idle enough machine.
        var target: Duration = .milliseconds(1)
        /// Attempts a second allowed however busy the machine is.
        var minimum: Double = 5
        /// Attempts a second allowed at the start.
        var initial: Double = 5
        /// Attempts a second allowed at most.
        var maximum: Double = 20_000
    }

    private struct State {
        var rate: Double
        var tokens: Double
        var lastRefill: ContinuousClock.Instant
        /// Longest wait seen by the probe in this window.
        var longestWait: Duration = .zero
        /// The worker asked for more than the tokens it had in this window.
        var wanted = false
    }

    let settings: Settings
    private let state: Mutex<State>
    private let clock = ContinuousClock()

    init(_ settings: Settings = Settings()) {
        self.settings = settings
        state = Mutex(State(rate: settings.initial, tokens: 1, lastRefill: ContinuousClock.now))
    }

    /// Attempts a second allowed now.
    var rate: Double { state.withLock { $0.rate } }

    /// Takes up to `wanted` attempts from what the rate allows now.
    func take(_ wanted: Int) -> Int {
        guard wanted > 0 else { return 0 }
        let now = clock.now
        return state.withLock { state in
            refill(&state, at: now)
            let granted = min(wanted, Int(state.tokens))
            state.tokens -= Double(granted)
            return granted
        }
    }

    /// Gives back attempts taken but not used (fewer submissions were due).
    func refund(_ unused: Int) {
        guard unused > 0 else { return }
        state.withLock { $0.tokens += Double(unused) }
    }

    /// The worker had more work ready than the rate allowed: the rate may grow if the machine keeps up.
    func limited() {
        state.withLock { $0.wanted = true }
    }

    /// How long until one attempt is allowed.
    func untilNext() -> Duration {
        state.withLock { state in
            let missing = max(0, 1 - state.tokens)
            return .microseconds(Int64(missing / state.rate * 1_000_000) + 1)
        }
    }

    private func refill(_ state: inout State, at now: ContinuousClock.Instant) {
        let elapsed = now - state.lastRefill
        state.lastRefill = now
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        // At most a tenth of a second's worth saved up: no burst after an idle spell.
        state.tokens = min(max(1, state.rate / 10), state.tokens + seconds * state.rate)
    }

    /// Records one probe's wait.
    func observe(wait: Duration) {
        state.withLock { $0.longestWait = max($0.longestWait, wait) }
    }

    /// Ends a window: adjusts the rate from what the probe saw.
    func adjust() {
        state.withLock { state in
            if state.longestWait > settings.target {
                state.rate = max(settings.minimum, state.rate * 0.6)
            } else if state.wanted {
                state.rate = min(settings.maximum, state.rate * 1.25 + 10)
            }
            state.longestWait = .zero
            state.wanted = false
        }
    }

    /// Probes the scheduler until cancelled: a yield every 10 ms, and `adjust()` every 100 ms.
    func run() async {
        var probes = 0
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(10))
            let before = clock.now
            await Task.yield()
            observe(wait: clock.now - before)
            probes += 1
            if probes % 10 == 0 { adjust() }
        }
    }
}
