import Synchronization
import Testing

@testable import TillServer

/// The pacer's rule: confirmations slow down while the scheduler's queue backs up, and speed up again while
/// it keeps up and there is work waiting.
@Suite struct ConfirmationPacerTests {
    @Test func aBackedUpQueueCutsTheRateAndAnIdleOneWithWorkRaisesIt() {
        let pacer = ConfirmationPacer(.init(target: .milliseconds(2), minimum: 20, initial: 200))
        pacer.observe(wait: .milliseconds(5))
        pacer.adjust()
        #expect(pacer.rate == 120)
        for _ in 0..<20 {
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

    @Test func attemptsAreGrantedFromTheRateWithoutABurst() async throws {
        let pacer = ConfirmationPacer(.init(target: .milliseconds(2), minimum: 20, initial: 100))
        // At most a tenth of a second's worth at once, however long the pacer was idle.
        try await Task.sleep(for: .milliseconds(300))
        let first = pacer.take(1000)
        #expect(first >= 9 && first <= 11, "\(first)")
        #expect(pacer.take(1000) == 0)
        #expect(pacer.untilNext() <= .milliseconds(11))
        // What was taken and not used comes back.
        pacer.refund(5)
        #expect(pacer.take(1000) == 5)
    }

    @Test func aBusyMachineCutsTheRateWhateverTheQueueSays() {
        let pacer = ConfirmationPacer(.init(target: .milliseconds(2), minimum: 20, initial: 200, busy: 0.6))
        pacer.observe(wait: .microseconds(100))
        pacer.observe(cpuBusy: 0.8)
        pacer.limited()
        pacer.adjust()
        #expect(pacer.rate == 120)
        // Below the share, with work waiting: it grows again.
        pacer.observe(wait: .microseconds(100))
        pacer.observe(cpuBusy: 0.4)
        pacer.limited()
        pacer.adjust()
        #expect(pacer.rate == 160)
    }

    @Test func answersWaitForTokensAndGoBeforeNewAttempts() async throws {
        // A token every 1,000 s: the test hands them out itself, so the scheduler's delays cannot matter.
        let pacer = ConfirmationPacer(.init(target: .milliseconds(2), minimum: 0.001, initial: 0.001))
        #expect(pacer.take(1000) == 1)  // the one token there is at the start
        let finished = Counter()
        let answers = (0..<3).map { _ in
            Task {
                await pacer.answer()
                finished.add()
            }
        }
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(30)
        while pacer.waitingAnswers < 3 && clock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        #expect(pacer.waitingAnswers == 3)
        // A token comes back: the first waiting answer takes it before a new attempt does.
        pacer.refund(1)
        #expect(pacer.take(1000) == 0)
        #expect(pacer.waitingAnswers == 2)
        while finished.value < 1 && clock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        #expect(finished.value == 1)
        for left in [1, 0] {
            pacer.refund(1)
            pacer.pump()
            #expect(pacer.waitingAnswers == left)
        }
        for answer in answers { await answer.value }
        #expect(pacer.waitingAnswers == 0)
    }

    @Test func anAnswerWaitsNoLongerThanItsLimit() async throws {
        let pacer = ConfirmationPacer(
            .init(target: .milliseconds(2), minimum: 0.001, initial: 0.001, longestAnswerWait: .milliseconds(50))
        )
        #expect(pacer.take(1) == 1)
        let answer = Task { await pacer.answer() }
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(30)
        while pacer.waitingAnswers < 1 && clock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        #expect(pacer.waitingAnswers == 1, "no token for 1,000 s, and nothing lets it through but pump()")
        try await Task.sleep(for: .milliseconds(60))
        pacer.pump()
        #expect(pacer.waitingAnswers == 0)
        await answer.value
    }

    @Test func waitingAnswersGoOnWhenTheProbeStops() async throws {
        let pacer = ConfirmationPacer(.init(target: .milliseconds(2), minimum: 0.001, initial: 0.001))
        #expect(pacer.take(1) == 1)
        let probe = Task { await pacer.run() }
        let answer = Task { await pacer.answer() }
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(5)
        while pacer.waitingAnswers < 1 && clock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        probe.cancel()
        await probe.value
        await answer.value
        #expect(pacer.waitingAnswers == 0)
    }

    #if os(Linux)
        @Test func theMachinesCPUShareIsReadFromTheKernel() async throws {
            var cpu = MachineCPU()
            #expect(cpu.busySinceLastCall() == nil, "nothing to compare with yet")
            try await Task.sleep(for: .milliseconds(50))
            let share = cpu.busySinceLastCall()
            #expect(share != nil && share! >= 0 && share! <= 1, "\(String(describing: share))")
        }
    #endif
}

private final class Counter: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
}
