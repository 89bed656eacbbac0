import Foundation
import SQLKit
import Synchronization
import Testing
import TillCore
import TillSimulator
import TillStorage

@testable import TillServer

/// Apple down in the middle of a run: purchases are still acknowledged and credited, and once Apple answers
/// again everything that waited is confirmed, once.
@Suite(.timeLimit(.minutes(2)))
struct OutageTests {
    @Test func purchasesDuringAnOutageAreAcknowledgedAndConfirmedAsSoonAsAppleAnswersAgain() async throws {
        // A back-off of a minute: without the recovery, nothing failed would be tried again within this test.
        try await ServerFixture.run(confirmation: .init(backoffBase: .seconds(60), backoffCap: .seconds(60))) {
            fixture in
            // Apple is down until the test says otherwise (not for a fixed time: a slow machine would let the
            // outage end before the first attempts).
            let outage = try FaultRule(parsing: "*:serverAPI:outage=reset")
            fixture.simulator.faults.add(outage)
            var during: [SubmissionResult] = []
            for _ in 0..<5 {
                let purchase = try await fixture.buy("gems.100")
                during.append(
                    try await fixture.server.submit(
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
            let waiting = try await fixture.server.submission(
                id: during[0].submission.id,
                bundleId: ServerFixture.bundleId
            )
            #expect(waiting.attempts == 1 && waiting.nextAttemptAt != nil)

            #expect(fixture.simulator.faults.remove(id: outage.id))
            let after = try await fixture.buy("gems.100")
            let next = try await fixture.server.submit(
                SubmissionRequest(customerId: "olga", signedTransaction: after.signedTransaction),
                app: fixture.app
            )
            #expect(try await fixture.settled(next).state == .confirmed)
            for result in during {
                let settled = try await fixture.settled(result, timeout: .seconds(10))
                #expect(settled.state == .confirmed && settled.attempts == 2)
            }
            let customer = try await fixture.server.customer(bundleId: ServerFixture.bundleId, customerId: "olga")
            #expect(customer.balances == ["gems": 600] && customer.purchases.count == 6)
            #expect(customer.purchases.allSatisfy { $0.confirmed })
            let rows = try await fixture.server.database.sql.raw(
                "SELECT COUNT(*) AS n, COUNT(DISTINCT transaction_id) AS d FROM srv_transactions"
            ).first()
            #expect(try rows?.decode(column: "n", as: Int.self) == 6 && rows?.decode(column: "d", as: Int.self) == 6)
        }
    }

    @Test func aDeadAppleIsProbedOnceASecondInsteadOfHammered() async throws {
        try await ServerFixture.run(confirmation: .init(backoffBase: .milliseconds(100), backoffCap: .seconds(1))) {
            fixture in
            let outage = try FaultRule(parsing: "*:serverAPI:outage=reset")
            fixture.simulator.faults.add(outage)
            var submitted: [SubmissionResult] = []
            for _ in 0..<20 {
                let purchase = try await fixture.buy("gems.100")
                submitted.append(
                    try await fixture.server.submit(
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
            let before = try await failedAttempts(fixture)
            try await Task.sleep(for: .seconds(3))
            // Without the probe, 20 due submissions with a back-off of 0.1–1 s make dozens of attempts in 3 s.
            let total = try await failedAttempts(fixture)
            #expect(total >= 1 && total - before <= 8, "\(total - before) attempts in 3 s while Apple was down")

            #expect(fixture.simulator.faults.remove(id: outage.id))
            for result in submitted {
                #expect(try await fixture.settled(result, timeout: .seconds(15)).state == .confirmed)
            }
            let customer = try await fixture.server.customer(bundleId: ServerFixture.bundleId, customerId: "rae")
            #expect(customer.balances == ["gems": 2000])
        }
    }

    @Test func afterAnOutageTheBacklogIsConfirmedWithASlowStart() async throws {
        try await ServerFixture.run { fixture in
            let server = fixture.server
            #expect(server.recoveryLimit(4096) == 4096)
            server.recoveringSince.withLock { $0 = ContinuousClock.now }
            #expect(server.recoveryLimit(4096) == 16)
            server.recoveringSince.withLock { $0 = ContinuousClock.now - .seconds(3) }
            #expect(server.recoveryLimit(4096) == 128)
            server.recoveringSince.withLock { $0 = ContinuousClock.now - .seconds(9) }
            #expect(server.recoveryLimit(4096) == 4096)
            // Full speed reached: the slow start is over.
            #expect(server.recoveringSince.withLock { $0 } == nil)
        }
    }

    /// Attempts that ended in a retry, from `/metrics`.
    func failedAttempts(_ fixture: ServerFixture) async throws -> Int {
        let exposition = String(decoding: try await fixture.server.metricsExposition(), as: UTF8.self)
        return exposition.split(separator: "\n")
            .filter { $0.hasPrefix(#"till_confirmations_total{result="retrying""#) }
            .compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }
            .reduce(0, +)
    }

    @Test func aReceiptsOwnProblemKeepsItsScheduleWhenAppleAnswersAgain() async throws {
        try await ServerFixture.run(confirmation: .init(backoffBase: .seconds(60), backoffCap: .seconds(60))) {
            fixture in
            // 21002 is about this receipt's data, not Apple's health: no reason to try it early.
            fixture.simulator.faults.add(try FaultRule(parsing: "*:verifyReceipt:status=21002,times=1"))
            _ = try await fixture.buy("pro")
            let stuck = try await fixture.server.submit(
                SubmissionRequest(customerId: "pia", receipt: try await fixture.receipt()),
                app: fixture.app
            )
            try await waitUntil { try await state(of: stuck, fixture) == .retrying }
            fixture.simulator.faults.add(try FaultRule(parsing: "*:serverAPI:outage=503,times=1"))
            let other = try await fixture.buy("gems.100")
            let unlucky = try await fixture.server.submit(
                SubmissionRequest(customerId: "quinn", signedTransaction: other.signedTransaction),
                app: fixture.app
            )
            try await waitUntil { try await state(of: unlucky, fixture) == .retrying }
            let third = try await fixture.buy("gems.100")
            let ok = try await fixture.server.submit(
                SubmissionRequest(customerId: "quinn", signedTransaction: third.signedTransaction),
                app: fixture.app
            )
            #expect(try await fixture.settled(ok).state == .confirmed)
            // The 503 was Apple's: brought forward and confirmed. The 21002 waits out its minute.
            #expect(try await fixture.settled(unlucky, timeout: .seconds(10)).state == .confirmed)
            #expect(try await state(of: stuck, fixture) == .retrying)
        }
    }

    func state(of result: SubmissionResult, _ fixture: ServerFixture) async throws -> SubmissionState {
        try await fixture.server.submission(id: result.submission.id, bundleId: ServerFixture.bundleId).state
    }
}
