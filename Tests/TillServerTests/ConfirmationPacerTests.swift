import Foundation
import Synchronization
import Testing

@testable import TillAppStore
@testable import TillServer

/// The pacer's rule: confirmations slow down while the scheduler's queue backs up, and speed up again while
/// it keeps up and there is work waiting.
///
/// Tests that wait for other tasks poll without a deadline of their own: on a loaded machine, with every suite
/// sharing two cooperative threads, a task was seen to wait 30 s for its turn. The suite's time limit bounds them.
@Suite(.timeLimit(.minutes(10))) struct ConfirmationPacerTests {
    @Test func aBackedUpQueueCutsTheRateAndAnIdleOneWithWorkRaisesIt() {
        let pacer = ConfirmationPacer(.init(target: .milliseconds(2), minimum: 20, initial: 200))
        pacer.served()
        pacer.observe(wait: .milliseconds(5))
        pacer.adjust()
        #expect(pacer.rate == 120)
        for _ in 0..<20 {
            pacer.served()
            pacer.observe(wait: .milliseconds(50))
            pacer.adjust()
        }
        #expect(pacer.rate == 20, "never below the minimum")

        // Keeping up, but nothing more was wanted: the rate stays.
        pacer.observe(wait: .microseconds(100))
        pacer.adjust()
        #expect(pacer.rate == 20)
        // Keeping up with work left over: it grows.
        pacer.limited()
        pacer.observe(wait: .microseconds(100))
        pacer.adjust()
        #expect(pacer.rate == 35)
    }

    @Test func attemptsAreGrantedFromTheRateWithoutABurst() {
        let clock = HandClock()
        let pacer = ConfirmationPacer(.init(target: .milliseconds(2), minimum: 20, initial: 100), now: clock.now)
        // At most a tenth of a second's worth at once, however long the pacer was idle.
        clock.advance(by: .milliseconds(300))
        #expect(pacer.take(1000) == 10)
        #expect(pacer.take(1000) == 0)
        #expect(pacer.untilNext() <= .milliseconds(10) + .microseconds(1))
        clock.advance(by: .milliseconds(25))
        #expect(pacer.take(1000) == 2, "one every 10 ms")
        // What was taken and not used comes back.
        pacer.refund(5)
        #expect(pacer.take(1000) == 5)
    }

    @Test func aBusyProcessCutsTheRateWhateverTheQueueSays() {
        let pacer = ConfirmationPacer(.init(target: .milliseconds(2), minimum: 20, initial: 200, busy: 0.6))
        pacer.served()
        pacer.observe(wait: .microseconds(100))
        pacer.observe(cpuBusy: 0.8)
        pacer.limited()
        pacer.adjust()
        #expect(pacer.rate == 120)
        // Below the share, with work waiting: it grows again.
        pacer.served()
        pacer.observe(wait: .microseconds(100))
        pacer.observe(cpuBusy: 0.4)
        pacer.limited()
        pacer.adjust()
        #expect(pacer.rate == 160)
    }

    /// Issue 15, item 9: what runs beside the server cannot hold confirmations at the floor. With no request
    /// waiting for this process the rate grows however slow its scheduler or however high its CPU; and under
    /// requests, confirmations that waited past `longestDelay` speed up anyway, so the queue always drains.
    @Test func pacingHoldsBackOnlyWhileRequestsWaitAndNeverStarvesTheQueue() {
        let pacer = ConfirmationPacer(
            .init(target: .milliseconds(1), minimum: 5, initial: 5, busy: 0.5, longestDelay: .seconds(30))
        )
        // Neighbours slow the scheduler and the process is busy confirming, but no one waits: it grows.
        for _ in 0..<10 {
            pacer.observe(wait: .milliseconds(40))
            pacer.observe(cpuBusy: 0.9)
            pacer.limited()
            pacer.adjust()
        }
        #expect(pacer.rate > 100, "\(pacer.rate)")
        // Requests come in and the process is slow: it yields, down to the floor.
        for _ in 0..<30 {
            pacer.served()
            pacer.observe(wait: .milliseconds(40))
            pacer.observe(lateness: .seconds(5))
            pacer.limited()
            pacer.adjust()
        }
        #expect(pacer.rate == 5)
        // The oldest due confirmation has waited past the limit: it grows however busy the process is.
        var previous = pacer.rate
        for _ in 0..<10 {
            pacer.served()
            pacer.observe(wait: .milliseconds(40))
            pacer.observe(cpuBusy: 0.9)
            pacer.observe(lateness: .seconds(31))
            pacer.adjust()
            #expect(pacer.rate > previous)
            previous = pacer.rate
        }
    }

    @Test func answersWaitForTokensAndGoBeforeNewAttempts() async throws {
        // The clock stands still: the test hands the tokens out itself, so the scheduler's delays cannot matter.
        let pacer = ConfirmationPacer(
            .init(target: .milliseconds(2), minimum: 0.001, initial: 0.001),
            now: HandClock().now
        )
        #expect(pacer.take(1000) == 1)  // the one token there is at the start
        let (finished, finishing) = AsyncStream.makeStream(of: Int.self)
        let answers = (0..<3).map { index in
            Task {
                await pacer.answer()
                finishing.yield(index)
            }
        }
        try await until { pacer.waitingAnswers == 3 }
        // A token comes back: the first waiting answer takes it before a new attempt does.
        pacer.refund(1)
        #expect(pacer.take(1000) == 0)
        #expect(pacer.waitingAnswers == 2)
        var order = finished.makeAsyncIterator()
        #expect(await order.next() != nil, "the answer let through goes on")
        for left in [1, 0] {
            pacer.refund(1)
            pacer.pump()
            #expect(pacer.waitingAnswers == left)
        }
        for answer in answers { await answer.value }
        #expect(pacer.waitingAnswers == 0)
    }

    @Test func anAnswerWaitsNoLongerThanItsLimit() async throws {
        let clock = HandClock()
        let pacer = ConfirmationPacer(
            .init(target: .milliseconds(2), minimum: 0.001, initial: 0.001, longestAnswerWait: .milliseconds(50)),
            now: clock.now
        )
        #expect(pacer.take(1) == 1)
        let answer = Task { await pacer.answer() }
        try await until { pacer.waitingAnswers == 1 }
        clock.advance(by: .milliseconds(49))
        pacer.pump()
        #expect(pacer.waitingAnswers == 1, "not yet")
        clock.advance(by: .milliseconds(1))
        pacer.pump()
        #expect(pacer.waitingAnswers == 0, "no token for 1,000 s, and nothing lets it through but pump()")
        await answer.value
    }

    /// Callers read the time before they take the pacer's lock: one that read it earlier can get there after one
    /// that read it later. Such a stale time took tokens away (elapsed time below zero times the rate), down below
    /// zero, and the next release read the waiting answers at a negative index: the test process died of SIGILL.
    @Test func aStaleTimeTakesNoTokensAway() async throws {
        let clock = HandClock()
        let pacer = ConfirmationPacer(.init(target: .milliseconds(2), minimum: 1000, initial: 1000), now: clock.now)
        #expect(pacer.take(1) == 1)  // the one token there is at the start
        let answer = Task { await pacer.answer() }
        try await until { pacer.waitingAnswers == 1 }
        // Read 5 ms before the time the pacer last saw: 5 tokens' worth at 1,000 a second.
        clock.advance(by: .milliseconds(-5))
        pacer.pump()
        #expect(pacer.waitingAnswers == 1, "no token came, and none was taken away")
        #expect(pacer.take(1000) == 0)
        // 1 ms after the latest time seen: one token, which the waiting answer takes.
        clock.advance(by: .milliseconds(6))
        pacer.pump()
        #expect(pacer.waitingAnswers == 0)
        await answer.value
        clock.advance(by: .milliseconds(2))
        #expect(pacer.take(1000) == 2)
    }

    @Test func waitingAnswersGoOnWhenTheProbeStops() async throws {
        let pacer = ConfirmationPacer(.init(target: .milliseconds(2), minimum: 0.001, initial: 0.001))
        #expect(pacer.take(1) == 1)
        let probe = Task { await pacer.run() }
        let answer = Task { await pacer.answer() }
        try await until { pacer.waitingAnswers == 1 }
        probe.cancel()
        await probe.value
        await answer.value
        #expect(pacer.waitingAnswers == 0)
    }

    @Test func theProcesssCPUShareCountsOnlyThisProcess() {
        var cpu = ProcessCPU()
        #expect(cpu.busySinceLastCall() == nil, "nothing to compare with yet")
        // Spin on this thread for a while: the share is this process's, of what all cores can give. Other tests
        // run in this process at the same time, so it may be anything up to the whole machine; the kernel accounts
        // the time of threads still running a little late or early, hence the tenth allowed over 1 (a full
        // run once saw more than 1 over 50 ms while every core was busy).
        let start = ContinuousClock.now
        var spins = 0
        while ContinuousClock.now - start < .milliseconds(200) { spins &+= 1 }
        let share = cpu.busySinceLastCall()
        #expect(share != nil && share! > 0 && share! <= 1.1, "\(String(describing: share)) after \(spins) spins")
    }
}

/// A clock that moves only when told to.
private final class HandClock: Sendable {
    private let instant = Mutex(ContinuousClock.now)
    var now: @Sendable () -> ContinuousClock.Instant { { self.instant.withLock { $0 } } }
    func advance(by duration: Duration) { instant.withLock { $0 += duration } }
}

/// Polls `condition` every millisecond until it holds; the test's time limit ends it otherwise.
private func until(_ condition: () -> Bool) async throws {
    while !condition() { try await Task.sleep(for: .milliseconds(1)) }
}
