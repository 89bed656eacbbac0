import Foundation
import Testing
import TillHTTPKit

/// The wake-up the confirmation worker, submission waits and the simulator's loops sleep on.
struct WakeupTests {
    /// Every wait below has a minute's timeout: returning well before it shows what ended the wait.
    static let minute = Duration.seconds(60)

    @Test func aSignalWakesEveryWaiterAtOnce() async throws {
        let wakeup = Wakeup()
        let since = wakeup.current
        let clock = ContinuousClock()
        let start = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<3 { group.addTask { await wakeup.wait(since: since, timeout: Self.minute) } }
            // The waiters are parked on continuations before the signal, or see the new generation at once.
            try await Task.sleep(for: .milliseconds(50))
            wakeup.signal()
            try await group.waitForAll()
        }
        #expect(clock.now - start < .seconds(30), "the waiters slept until their timeout instead of waking")
        #expect(wakeup.current == since + 1)
    }

    @Test func aSignalBeforeTheWaitIsNotLost() async {
        let wakeup = Wakeup()
        let since = wakeup.current
        wakeup.signal()
        let clock = ContinuousClock()
        let start = clock.now
        await wakeup.wait(since: since, timeout: Self.minute)
        #expect(clock.now - start < .seconds(30))
    }

    @Test func withoutASignalTheWaitEndsAtItsTimeout() async {
        let wakeup = Wakeup()
        let clock = ContinuousClock()
        let start = clock.now
        await wakeup.wait(since: wakeup.current, timeout: .milliseconds(100))
        #expect(clock.now - start >= .milliseconds(100))
    }

    @Test func cancellingTheWaiterEndsTheWait() async throws {
        let wakeup = Wakeup()
        let clock = ContinuousClock()
        let start = clock.now
        let waiter = Task { await wakeup.wait(since: wakeup.current, timeout: Self.minute) }
        try await Task.sleep(for: .milliseconds(50))
        waiter.cancel()
        await waiter.value
        #expect(clock.now - start < .seconds(30), "a cancelled waiter slept on")
        // The cancelled waiter left nothing behind that a later signal would resume twice.
        wakeup.signal()
    }
}
