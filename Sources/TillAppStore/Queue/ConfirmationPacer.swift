import Foundation
import Synchronization
import TillCatalogue
import TillLedger

#if canImport(Glibc)
    import Glibc
#endif

/// Paces confirmation work so that it uses the CPU that acknowledging purchases leaves.
///
/// A customer waits for the acknowledgement and nobody waits for the confirmation, so under load the
/// confirmations must yield. Apple's latency costs nothing (a confirmation in flight only waits); the
/// work around each call does cost something: the request, reading the answer, settling the outcome. At
/// 1,000 purchases a second on two cores, unpaced confirmations took the CPU and acknowledgements queued
/// for seconds.
///
/// Two kinds of work take tokens from one rate: starting an attempt (`take`), and reading an answer that came
/// back (`answer()`, which waits its turn; waiting answers come first). Pacing the starts alone was not
/// enough: an attempt's cost comes seconds after its start, and the starts of a quiet second came back as a
/// burst in a busy one.
///
/// Every signal is this process's own, so that what runs beside it (a database, a build, other tenants) cannot
/// hold its confirmations back: every 10 ms a probe task yields and measures how long it waited to run again
/// (what every request handler also waits at each step), every 100 ms this process's CPU time is read
/// (`getrusage`) as a share of the machine's cores, and the HTTP layer counts the requests it answers
/// (`served()`). Every 100 ms the rate is adjusted, in the manner of TCP's congestion control:
/// - the oldest due attempt claimed in the window had waited more than `longestDelay`: the rate grows by 25%
///   (and 10/s) whatever else holds, so that the queue always drains — pacing may defer confirmations, never
///   starve them;
/// - otherwise, when requests were answered in the window (someone is waiting for this process) and the
///   probe's longest wait was over `target` or this process used more than `busy` of the machine's cores: the
///   rate is cut to 60%, never below `minimum`;
/// - otherwise, if the worker used the whole rate (it had more work ready) or answers are waiting, the rate
///   grows by 25% (and 10/s). With no request to protect, nothing holds it back.
package final class ConfirmationPacer: Sendable {
    struct Settings: Sendable {
        /// Longest queue wait that still counts as an idle enough machine.
        var target: Duration = .milliseconds(1)
        /// Attempts a second allowed however busy the machine is.
        var minimum: Double = 5
        /// Attempts a second allowed at the start.
        var initial: Double = 5
        /// Attempts a second allowed at most.
        var maximum: Double = 20_000
        /// Share of the machine's cores this process may use while it answers requests, above which it counts
        /// as busy.
        var busy: Double = 0.5
        /// The longest a due attempt waits for pacing's sake: past it, the rate grows until the queue catches up.
        var longestDelay: Duration = .seconds(30)
        /// Longest an answer waits for its turn; past it, it is read anyway (its claim must not lapse).
        var longestAnswerWait: Duration = .seconds(30)
    }

    private struct State {
        var rate: Double
        var tokens: Double
        var lastRefill: ContinuousClock.Instant
        /// Longest wait seen by the probe in this window.
        var longestWait: Duration = .zero
        /// The worker asked for more than the tokens it had in this window.
        var wanted = false
        /// Answers from Apple waiting for a token before they are read and settled, oldest first, with the
        /// time each must go on at the latest.
        var answers: [(wake: CheckedContinuation<Void, Never>, deadline: ContinuousClock.Instant)] = []
        /// Share of the machine's cores this process used in the last window, when the system says.
        var cpuBusy: Double?
        /// Requests answered in this window.
        var served = 0
        /// How long the oldest due attempt claimed in this window had waited past its due time.
        var lateness: Duration = .zero
        /// The probe stopped: answers go through at once.
        var closed = false
    }

    let settings: Settings
    private let state: Mutex<State>
    private let clock = ContinuousClock()
    /// The time that tokens are counted in; tests turn it by hand.
    private let now: @Sendable () -> ContinuousClock.Instant

    init(_ settings: Settings = Settings(), now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.settings = settings
        self.now = now
        state = Mutex(State(rate: settings.initial, tokens: 1, lastRefill: now()))
    }

    /// Attempts a second allowed now.
    var rate: Double { state.withLock { $0.rate } }

    /// Takes up to `wanted` attempts from what the rate allows now. Answers waiting come first: a new
    /// attempt is work later, a waiting answer is work now.
    func take(_ wanted: Int) -> Int {
        guard wanted > 0 else { return 0 }
        let now = self.now()
        let (granted, released) = state.withLock { state in
            refill(&state, at: now)
            let released = release(&state, at: now)
            let granted = state.answers.isEmpty ? max(0, min(wanted, Int(state.tokens))) : 0
            state.tokens -= Double(granted)
            return (granted, released)
        }
        for answer in released { answer.resume() }
        return granted
    }

    /// Waits for a token before an answer from Apple is read and settled.
    ///
    /// An attempt's cost comes seconds after it starts, when Apple answers: pacing the starts alone lets the
    /// answers of a busy spell's start land all at once on a later one (at 1,000 purchases a second, a second
    /// of starts came back as a burst that took the acknowledgements' p99 past 20 ms). The answers share the
    /// starts' tokens; `pump()` lets them through in order.
    func answer() async {
        await withCheckedContinuation { continuation in
            let now = self.now()
            let deadline = now + settings.longestAnswerWait
            let go = state.withLock { state -> Bool in
                refill(&state, at: now)
                if state.closed { return true }
                if state.answers.isEmpty && state.tokens >= 1 {
                    state.tokens -= 1
                    return true
                }
                state.answers.append((continuation, deadline))
                return false
            }
            if go { continuation.resume() }
        }
    }

    /// Lets through the waiting answers the tokens allow.
    func pump() {
        let now = self.now()
        let released = state.withLock { state in
            refill(&state, at: now)
            return release(&state, at: now)
        }
        for answer in released { answer.resume() }
    }

    /// Answers waiting now.
    var waitingAnswers: Int { state.withLock { $0.answers.count } }

    private func release(_ state: inout State, at now: ContinuousClock.Instant) -> [CheckedContinuation<Void, Never>] {
        var count = max(0, min(state.answers.count, Int(state.tokens)))
        state.tokens -= Double(count)
        // The oldest first: past its deadline, an answer goes on without a token.
        while count < state.answers.count && state.answers[count].deadline <= now { count += 1 }
        guard count > 0 else { return [] }
        let released = state.answers.prefix(count).map(\.wake)
        state.answers.removeFirst(count)
        return released
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

    /// Every caller reads `now` before it takes the lock, so one that read it earlier can get here after one that
    /// read it later: time seen going backwards adds nothing and takes nothing away. (It once took the tokens
    /// below zero, and `release` then read the waiting answers at index -1: a trap that killed the process.)
    private func refill(_ state: inout State, at now: ContinuousClock.Instant) {
        guard now > state.lastRefill else { return }
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

    /// Records the share of the machine's cores this process used in the window that ends.
    func observe(cpuBusy: Double?) {
        state.withLock { $0.cpuBusy = cpuBusy }
    }

    /// A request was answered: someone waits for this process, and confirmations yield to them.
    package func served() {
        state.withLock { $0.served += 1 }
    }

    /// The worker claimed due attempts, the oldest of which had waited `lateness` past its due time.
    func observe(lateness: Duration) {
        state.withLock { $0.lateness = max($0.lateness, lateness) }
    }

    /// Ends a window: adjusts the rate from what the window saw.
    func adjust() {
        state.withLock { state in
            let busy =
                state.served > 0 && (state.longestWait > settings.target || (state.cpuBusy ?? 0) > settings.busy)
            if state.lateness > settings.longestDelay {
                state.rate = min(settings.maximum, state.rate * 1.25 + 10)
            } else if busy {
                state.rate = max(settings.minimum, state.rate * 0.6)
            } else if state.wanted || !state.answers.isEmpty {
                state.rate = min(settings.maximum, state.rate * 1.25 + 10)
            }
            state.longestWait = .zero
            state.wanted = false
            state.cpuBusy = nil
            state.served = 0
            state.lateness = .zero
        }
    }

    /// Probes the scheduler until cancelled: a yield every 10 ms, and `adjust()` every 100 ms; lets waiting
    /// answers through at each probe. On cancellation every waiting answer goes on.
    func run() async {
        state.withLock { $0.closed = false }
        var probes = 0
        var cpu = ProcessCPU()
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(10))
            let before = clock.now
            await Task.yield()
            observe(wait: clock.now - before)
            probes += 1
            if probes % 10 == 0 {
                observe(cpuBusy: cpu.busySinceLastCall())
                adjust()
            }
            pump()
        }
        let left = state.withLock { state in
            defer { state.answers = [] }
            state.closed = true
            return state.answers
        }
        for answer in left { answer.wake.resume() }
    }
}

/// The share of the machine's cores this process uses: its CPU time (user and system, every thread, from
/// `getrusage`) over the time passed times the cores. Other processes do not count: what runs beside the server
/// must not decide how fast it confirms.
public struct ProcessCPU {
    private var last: (cpu: Duration, at: ContinuousClock.Instant)?
    private let cores = Double(max(1, ProcessInfo.processInfo.activeProcessorCount))

    public init() {}

    /// This process's share since the previous call (nil at the first call).
    public mutating func busySinceLastCall() -> Double? {
        let now = (cpu: Self.used(), at: ContinuousClock.now)
        defer { last = now }
        guard let last else { return nil }
        let wall = now.at - last.at
        guard wall > .zero else { return nil }
        return (now.cpu - last.cpu) / wall / cores
    }

    /// User and system time this process has used.
    public static func used() -> Duration {
        var usage = rusage()
        #if canImport(Glibc)
            getrusage(RUSAGE_SELF.rawValue, &usage)
        #else
            getrusage(RUSAGE_SELF, &usage)
        #endif
        func duration(_ time: timeval) -> Duration { .seconds(Int64(time.tv_sec)) + .microseconds(Int64(time.tv_usec)) }
        return duration(usage.ru_utime) + duration(usage.ru_stime)
    }
}
