import Foundation
import SQLKit
import Synchronization
import Testing
import TillContract
import TillCore
import TillLedger
import TillSimulator
import TillStorage
import TillTestSupport

@testable import TillAppStore
@testable import TillServer

/// Apple down in the middle of a run: purchases are still acknowledged and credited, and once Apple answers
/// again everything that waited is confirmed, once.
@Suite(.sharingTheMachine, .timeLimit(.minutes(10)))
struct OutageTests {
    @Test(arguments: TestDatabase.all) func purchasesDuringAnOutageAreAcknowledgedAndConfirmedAsSoonAsAppleAnswersAgain(
        _ database: TestDatabase
    ) async throws {
        // A back-off of a minute: without the recovery, nothing failed would be tried again within this test.
        try await ServerFixture.run(
            database: database,
            confirmation: .init(backoffBase: .seconds(60), backoffCap: .seconds(60))
        ) {
            fixture in
            // Apple is down until the test says otherwise (not for a fixed time: a slow machine would let the
            // outage end before the first attempts).
            let outage = try FaultRule(parsing: "*:serverAPI:outage=reset")
            fixture.simulator.faults.add(outage)
            var during: [SubmissionResult] = []
            for _ in 0..<5 {
                let purchase = try await fixture.buy("gems.100")
                during.append(
                    try await fixture.server.intake.submit(
                        SubmissionRequest(customerId: "olga", signedTransaction: purchase.signedTransaction),
                        app: fixture.app
                    )
                )
            }
            // Acknowledged and credited at once, whatever Apple is doing.
            #expect(during.allSatisfy { $0.submission.state == .pending })
            #expect(during.last?.customer.balances == ["gems": 500])
            try await waitUntil {
                var states: [SubmissionState] = []
                for result in during { states.append(try await state(of: result, fixture)) }
                return states.allSatisfy { $0 == .retrying }
            }
            let waiting = try await fixture.server.intake.submission(
                id: during[0].submission.id,
                bundleId: ServerFixture.bundleId
            )
            #expect(waiting.attempts == 1 && waiting.nextAttemptAt != nil)

            #expect(fixture.simulator.faults.remove(id: outage.id))
            let after = try await fixture.buy("gems.100")
            let next = try await fixture.server.intake.submit(
                SubmissionRequest(customerId: "olga", signedTransaction: after.signedTransaction),
                app: fixture.app
            )
            #expect(try await fixture.settled(next).state == .confirmed)
            for result in during {
                let settled = try await fixture.settled(result)
                #expect(settled.state == .confirmed && settled.attempts == 2)
            }
            let customer = try await fixture.server.customers.customer(
                bundleId: ServerFixture.bundleId,
                customerId: "olga"
            )
            #expect(customer.balances == ["gems": 600] && customer.purchases.count == 6)
            #expect(customer.purchases.allSatisfy { $0.confirmed })
            let rows = try await fixture.server.database.sql.raw(
                "SELECT COUNT(*) AS n, COUNT(DISTINCT transaction_id) AS d FROM srv_transactions"
            ).first()
            #expect(try rows?.decode(column: "n", as: Int.self) == 6 && rows?.decode(column: "d", as: Int.self) == 6)
        }
    }

    @Test(arguments: TestDatabase.all) func aDeadAppleIsProbedOnceASecondInsteadOfHammered(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(
            database: database,
            confirmation: .init(backoffBase: .milliseconds(100), backoffCap: .seconds(1))
        ) {
            fixture in
            let outage = try FaultRule(parsing: "*:serverAPI:outage=reset")
            fixture.simulator.faults.add(outage)
            var submitted: [SubmissionResult] = []
            for _ in 0..<20 {
                let purchase = try await fixture.buy("gems.100")
                submitted.append(
                    try await fixture.server.intake.submit(
                        SubmissionRequest(customerId: "rae", signedTransaction: purchase.signedTransaction),
                        app: fixture.app
                    )
                )
            }
            // Counted over a fixed window that starts once the worker has seen Apple fail and the attempts already
            // in flight then have ended, so that a slow machine (the first attempts coming late) does not put the
            // first wave inside the window.
            try await waitUntil { try await failedAttempts(fixture) >= 1 }
            try await Task.sleep(for: .seconds(1))
            // The window is measured, not assumed: a loaded machine may sleep far longer than asked, and the rule
            // is a rate (one probe a second), so the bound grows with the time that really passed.
            let clock = ContinuousClock()
            let start = clock.now
            let before = try await failedAttempts(fixture)
            try await Task.sleep(for: .seconds(3))
            let total = try await failedAttempts(fixture)
            let seconds = Double((clock.now - start).components.seconds) + 1
            // Without the probe, 20 due submissions with a back-off of 0.1–1 s make dozens of attempts a second.
            #expect(
                total >= 1 && Double(total - before) <= seconds + 2,
                "\(total - before) attempts in \(clock.now - start) while Apple was down"
            )

            #expect(fixture.simulator.faults.remove(id: outage.id))
            for result in submitted {
                #expect(try await fixture.settled(result).state == .confirmed)
            }
            let customer = try await fixture.server.customers.customer(
                bundleId: ServerFixture.bundleId,
                customerId: "rae"
            )
            #expect(customer.balances == ["gems": 2000])
        }
    }

    /// After an outage the backlog is confirmed with a slow start: 16 in flight, doubling each second, up to the
    /// configured concurrency, after which the slow start is over. Worked out on given instants: a live worker
    /// would race the test for the shared state.
    @Test func theSlowStartAfterAnOutageBeginsAtSixteenAndDoublesEachSecond() {
        let start = ContinuousClock.now
        let limits = [0, 1, 3, 7, 8, 30].map {
            ConfirmationQueue.slowStartLimit(since: start, now: start + .seconds($0), concurrency: 4096)
        }
        #expect(limits == [16, 32, 128, 2048, 4096, 4096])
        #expect(ConfirmationQueue.slowStartLimit(since: start, now: start + .milliseconds(999), concurrency: 64) == 16)
        #expect(ConfirmationQueue.slowStartLimit(since: start, now: start + .seconds(2), concurrency: 40) == 40)
    }

    /// Once the slow start reaches full speed it is over: later limits are the whole concurrency at once.
    @Test func theSlowStartEndsAtFullSpeed() async throws {
        // A server without a worker: nothing else reads or clears the recovery while the test does.
        let server = try await PurchaseServer.open(ServerConfiguration(operatorToken: "operator"))
        let start = ContinuousClock.now
        #expect(server.queue.recoveryLimit(64, now: start) == 64)
        server.queue.recoveringSince.withLock { $0 = start }
        #expect(server.queue.recoveryLimit(64, now: start + .seconds(1)) == 32)
        #expect(server.queue.recoveringSince.withLock { $0 } == start)
        #expect(server.queue.recoveryLimit(64, now: start + .seconds(2)) == 64)
        #expect(server.queue.recoveringSince.withLock { $0 } == nil)
        #expect(server.queue.recoveryLimit(64, now: start) == 64)
        try await server.shutdown()
    }

    /// Attempts that ended in a retry, from `/metrics`.
    func failedAttempts(_ fixture: ServerFixture) async throws -> Int {
        let exposition = String(decoding: try await fixture.server.metricsExposition(), as: UTF8.self)
        return exposition.split(separator: "\n")
            .filter { $0.hasPrefix(#"till_confirmations_total{result="retrying""#) }
            .compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }
            .reduce(0, +)
    }

    @Test(arguments: TestDatabase.all) func aReceiptsOwnProblemKeepsItsScheduleWhenAppleAnswersAgain(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(
            database: database,
            confirmation: .init(backoffBase: .seconds(60), backoffCap: .seconds(60))
        ) {
            fixture in
            // 21002 is about this receipt's data, not Apple's health: no reason to try it early.
            fixture.simulator.faults.add(try FaultRule(parsing: "*:verifyReceipt:status=21002,times=1"))
            _ = try await fixture.buy("pro")
            let stuck = try await fixture.server.intake.submit(
                SubmissionRequest(customerId: "pia", receipt: try await fixture.receipt()),
                app: fixture.app
            )
            try await waitUntil { try await state(of: stuck, fixture) == .retrying }
            fixture.simulator.faults.add(try FaultRule(parsing: "*:serverAPI:outage=503,times=1"))
            let other = try await fixture.buy("gems.100")
            let unlucky = try await fixture.server.intake.submit(
                SubmissionRequest(customerId: "quinn", signedTransaction: other.signedTransaction),
                app: fixture.app
            )
            try await waitUntil { try await state(of: unlucky, fixture) == .retrying }
            let third = try await fixture.buy("gems.100")
            let ok = try await fixture.server.intake.submit(
                SubmissionRequest(customerId: "quinn", signedTransaction: third.signedTransaction),
                app: fixture.app
            )
            #expect(try await fixture.settled(ok).state == .confirmed)
            // The 503 was Apple's: brought forward and confirmed. The 21002 waits out its minute.
            #expect(try await fixture.settled(unlucky).state == .confirmed)
            #expect(try await state(of: stuck, fixture) == .retrying)
        }
    }

    func state(of result: SubmissionResult, _ fixture: ServerFixture) async throws -> SubmissionState {
        try await fixture.server.intake.submission(id: result.submission.id, bundleId: ServerFixture.bundleId).state
    }
}
