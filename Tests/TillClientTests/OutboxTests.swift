import Foundation
import Testing
import TillClient
import TillContract
import TillCore
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// The outbox: nothing is lost while the server is away, nothing reaches the ledger twice.
@Suite(.sharingTheMachine, .timeLimit(.minutes(10)))
struct OutboxTests {
    @Test(arguments: TestDatabase.all) func aPurchaseMadeWhileTheServerIsDownWaitsInTheOutboxAndIsSentOnceWhenItIsBack(
        _ database: TestDatabase
    ) async throws {
        try await ClientFixture.run(database: database) { fixture in
            // Find a port for the server, then take it down.
            var url = ""
            try await fixture.serve { url = $0 }
            let port = try #require(URLComponents(string: url)?.port)
            let coordinator = try fixture.coordinator(url)

            let outcome = try await coordinator.purchase(productId: "gems.100")
            guard case .notDelivered(let failure) = outcome else {
                Issue.record("expected notDelivered, got \(outcome)")
                return
            }
            #expect(failure.stage == .submission && failure.queuedInOutbox)
            #expect(failure.error.kind == .unreachable && failure.error.isTemporary)
            let transactionId = failure.transaction.transactionId
            let waiting = await coordinator.outbox.pending
            #expect(waiting.count == 1)
            let entry = try #require(waiting.first)
            #expect(entry.customerId == "alice" && entry.transactionId == transactionId)
            #expect(entry.idempotencyKey.hasPrefix("tx-\(transactionId)-"))
            #expect(abs(entry.createdAt - Int64(Date().timeIntervalSince1970 * 1000)) < 60_000)
            #expect(entry.attempts == 1 && entry.lastError != nil)
            let files = try FileManager.default.contentsOfDirectory(
                atPath: coordinator.outbox.directory.appendingPathComponent("pending").path
            )
            #expect(files.count == 1 && files[0].hasSuffix(".json"))
            // The store still holds the transaction: it is not finished before the server has it.
            #expect(try await fixture.unfinished().map(\.transactionId) == [transactionId])

            // Still down: once it is due, the periodic retry sends it again and keeps it, a little later each time.
            let due = Date(timeIntervalSince1970: Double(entry.nextAttemptAt) / 1000)
            try await Task.sleep(for: .milliseconds(max(0, Int(due.timeIntervalSinceNow * 1000)) + 20))
            await coordinator.retry()
            let retried = try #require(await coordinator.outbox.pending.first)
            #expect(retried.attempts >= 2 && retried.nextAttemptAt > entry.nextAttemptAt)

            // Back on the same port: the retry sends it, delivers, finishes.
            try await fixture.serve(port: port) { _ in
                let deadline = ContinuousClock.now + .seconds(60)
                while try await !fixture.unfinished().isEmpty, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(100))
                    await coordinator.retry()
                }
                #expect(try await fixture.unfinished().isEmpty)
                #expect(await coordinator.outbox.pending.isEmpty)
                #expect(await coordinator.balance(of: "gems") == 100)
                #expect(try await fixture.customer("alice").balances == ["gems": 100])
                #expect(try await fixture.submissions(containing: transactionId) == 1)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func aSubmissionSentBeforeAKillIsAnsweredWithTheSameSubmissionWhenResent(
        _ database: TestDatabase
    ) async throws {
        try await ClientFixture.run(database: database) { fixture in
            try await fixture.serve { url in
                let client = fixture.client(url)
                let directory = fixture.directory.appendingPathComponent("outbox")
                let transaction = try await fixture.buy("gems.100")
                let entry = OutboxEntry(
                    idempotencyKey: "tx-\(transaction.transactionId)-1",
                    customerId: "alice",
                    evidence: .signedTransaction(try #require(transaction.signedTransaction)),
                    createdAt: Int64(Date().timeIntervalSince1970 * 1000),
                    transactionId: transaction.transactionId
                )
                try await Outbox(directory: directory, server: client).enqueue(entry)
                // The request reaches the server, and the process dies before it reads the answer.
                let first = try await client.submit(
                    entry.evidence,
                    customerId: "alice",
                    idempotencyKey: entry.idempotencyKey
                )

                let relaunched = try Outbox(directory: directory, server: client)
                #expect(await relaunched.pending == [entry])
                let results = await relaunched.flush(includingNotDue: true)
                guard case .acknowledged(let answer)? = results.first?.delivery else {
                    Issue.record("expected an acknowledgement, got \(results)")
                    return
                }
                #expect(answer.submission.id == first.submission.id)
                #expect(await relaunched.pending.isEmpty)
                #expect(try await fixture.customer("alice").balances == ["gems": 100])
                #expect(try await fixture.submissions(containing: transaction.transactionId) == 1)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func aSubmissionTheServerRefusesForGoodIsKeptAsideWithTheReason(
        _ database: TestDatabase
    ) async throws {
        try await ClientFixture.run(database: database) { fixture in
            try await fixture.serve { url in
                let client = fixture.client(url)
                let directory = fixture.directory.appendingPathComponent("outbox")
                let outbox = try Outbox(directory: directory, server: client)
                let forged = OutboxEntry(
                    idempotencyKey: "forged-1",
                    customerId: "alice",
                    evidence: .signedTransaction("eyJhbGciOiJFUzI1NiJ9.eyJ4IjoxfQ.c2lnbmF0dXJl"),
                    createdAt: Int64(Date().timeIntervalSince1970 * 1000)
                )
                let (_, delivery) = try await outbox.submit(forged)
                guard case .rejected(let error) = delivery else {
                    Issue.record("expected rejected, got \(delivery)")
                    return
                }
                #expect(error.status == 422 && error.code != nil && error.isPermanentRefusal)
                #expect(await outbox.pending.isEmpty)
                let rejected = try #require(await outbox.rejected.first)
                #expect(rejected.entry == forged && rejected.status == 422 && rejected.code == error.code)
                #expect(
                    try FileManager.default.contentsOfDirectory(
                        atPath: directory.appendingPathComponent("rejected").path
                    )
                    .count == 1
                )
                // Kept across launches, and never sent again by a flush.
                let relaunched = try Outbox(directory: directory, server: client)
                #expect(await relaunched.rejected.map(\.entry) == [forged])
                #expect(await relaunched.flush(includingNotDue: true).isEmpty)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func leftoversOfAWriteCutShortAreIgnoredAndWholeEntriesKept(
        _ database: TestDatabase
    ) async throws {
        try await ClientFixture.run(database: database) { fixture in
            let directory = fixture.directory.appendingPathComponent("outbox")
            let client = fixture.client(try await ClientFixture.deadURL())
            let entry = OutboxEntry(
                idempotencyKey: "k-1",
                customerId: "alice",
                evidence: .appReceipt("MIIB"),
                createdAt: 1_700_000_000_000
            )
            try await Outbox(directory: directory, server: client).enqueue(entry)
            // A crash in the middle of the next write leaves a temporary file, never a torn entry.
            let leftover = directory.appendingPathComponent("pending/.tmp-\(UUID().uuidString)")
            try Data("{\"idempotencyKey\":\"k-2\",\"cust".utf8).write(to: leftover)

            let relaunched = try Outbox(directory: directory, server: client)
            #expect(await relaunched.pending == [entry])
            #expect(!FileManager.default.fileExists(atPath: leftover.path))
            // Enqueueing the same key again keeps the first bytes.
            var changed = entry
            changed.evidence = .appReceipt("MIIC")
            #expect(try await relaunched.enqueue(changed) == entry)
            // Unreachable: it stays, with its next attempt pushed back.
            let delivery = await relaunched.send(idempotencyKey: "k-1")
            guard case .queued(let error) = delivery else {
                Issue.record("expected queued, got \(delivery)")
                return
            }
            #expect(error.kind == .unreachable)
            let after = try #require(await relaunched.pending.first)
            #expect(after.attempts == 1 && after.nextAttemptAt > Int64(Date().timeIntervalSince1970 * 1000))
            #expect(await relaunched.flush().isEmpty)  // not due yet
        }
    }

    @Test func backoffDoublesUpToItsCap() {
        let backoff = Backoff(base: 2, cap: 60, jitter: 0)
        #expect((1...7).map { backoff.delay(afterAttempts: $0) } == [2, 4, 8, 16, 32, 60, 60])
        let jittered = Backoff(base: 10, cap: 60, jitter: 0.2)
        for _ in 0..<20 {
            let delay = jittered.delay(afterAttempts: 1)
            #expect(delay <= 10 && delay >= 8)
        }
    }
}
