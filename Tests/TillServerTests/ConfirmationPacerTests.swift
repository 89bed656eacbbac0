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
}
