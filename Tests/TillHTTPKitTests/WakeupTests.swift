import Foundation
import Testing
import TillHTTPKit

/// The wake-up the confirmation worker, submission waits and the simulator's loops sleep on.
///
/// Each wait says why it ended, so these tests do not time anything: on a loaded machine the whole test process
/// can stall for tens of seconds, which would make "it returned quickly" fail for the machine's reasons. The
/// timeouts are ten minutes: a broken wake-up ends in `.timedOut` (or the test's time limit), never in a pass.
@Suite(.timeLimit(.minutes(15)))
struct WakeupTests {
    static let long = Duration.seconds(600)

    @Test func aSignalWakesEveryWaiter() async throws {
        let wakeup = Wakeup()
        let since = wakeup.current
        let outcomes = try await withThrowingTaskGroup(of: Wakeup.Outcome.self) { group in
            for _ in 0..<3 { group.addTask { await wakeup.wait(since: since, timeout: Self.long) } }
            // The waiters are parked on continuations by then, or see the new generation when they start.
            try await Task.sleep(for: .milliseconds(50))
            wakeup.signal()
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes == [.signalled, .signalled, .signalled])
        #expect(wakeup.current == since + 1)
    }

    @Test func aSignalBeforeTheWaitIsNotLost() async {
        let wakeup = Wakeup()
        let since = wakeup.current
        wakeup.signal()
        #expect(await wakeup.wait(since: since, timeout: Self.long) == .signalled)
    }

    @Test func withoutASignalTheWaitEndsAtItsTimeout() async {
        let wakeup = Wakeup()
        let clock = ContinuousClock()
        let start = clock.now
        #expect(await wakeup.wait(since: wakeup.current, timeout: .milliseconds(100)) == .timedOut)
        #expect(clock.now - start >= .milliseconds(100))
    }

    @Test func cancellingTheWaiterEndsTheWait() async throws {
        let wakeup = Wakeup()
        let waiter = Task { await wakeup.wait(since: wakeup.current, timeout: Self.long) }
        try await Task.sleep(for: .milliseconds(50))
        waiter.cancel()
        #expect(await waiter.value == .cancelled)
        // The cancelled waiter left nothing behind that a later signal would resume a second time.
        wakeup.signal()
    }
}
