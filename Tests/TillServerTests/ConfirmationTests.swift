import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import SQLKit
import Testing
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillJobs
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillAppStore
@testable import TillServer
@testable import TillSimulator

/// The pipeline against the simulator: local verification at once, confirmation with "Apple" in the background.
@Suite(.sharingTheMachine)
struct ConfirmationTests {
    @Test(arguments: TestDatabase.all) func aSignedTransactionIsGrantedAtOnceAndConfirmedThroughTheServerAPI(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let purchase = try await fixture.buy("pro")
            let result = try await fixture.server.intake.submit(
                SubmissionRequest(customerId: "alice", signedTransaction: purchase.signedTransaction),
                app: fixture.app
            )
            #expect(result.submission.state == .pending)
            #expect(
                result.customer.entitlements.map(\.id) == ["pro"]
                    && result.customer.entitlements.first?.provisional == true
            )
            let settled = try await fixture.settled(result)
            #expect(settled.state == .confirmed && settled.lastStatus == "HTTP 200")
            let customer = try await fixture.server.customers.customer(
                bundleId: ServerFixture.bundleId,
                customerId: "alice"
            )
            #expect(customer.entitlements.first?.provisional == false)
        }
    }

    @Test(arguments: TestDatabase.all) func anAppReceiptIsConfirmedThroughVerifyReceiptAfterThe21007Redirect(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            _ = try await fixture.buy("gems.100", quantity: 2)
            _ = try await fixture.buy("premium.monthly")
            let result = try await fixture.server.intake.submit(
                SubmissionRequest(customerId: "bob", receipt: try await fixture.receipt()),
                app: fixture.app
            )
            #expect(result.customer.balances == ["gems": 200])
            #expect(result.customer.entitlements.map(\.id) == ["premium"])
            let settled = try await fixture.settled(result)
            #expect(settled.state == .confirmed && settled.environment == "Sandbox" && settled.lastStatus == "status 0")
            // Renewals Apple reports are recorded even though the app never sent them.
            _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
            let again = try await fixture.server.intake.submit(
                SubmissionRequest(customerId: "bob", receipt: try await fixture.receipt()),
                app: fixture.app
            )
            _ = try await fixture.settled(again)
            let customer = try await fixture.server.customers.customer(
                bundleId: ServerFixture.bundleId,
                customerId: "bob"
            )
            #expect(customer.purchases.filter { $0.productId == "premium.monthly" }.count == 2)
            #expect(customer.balances == ["gems": 200])
        }
    }

    @Test(arguments: TestDatabase.all) func temporaryFailuresAreRetriedWithTheirCauseRecorded(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            _ = try await fixture.buy("pro")
            fixture.simulator.faults.add(try FaultRule(parsing: "*:verifyReceipt:status=21005,times=2"))
            let result = try await fixture.server.intake.submit(
                SubmissionRequest(customerId: "carol", receipt: try await fixture.receipt()),
                app: fixture.app
            )
            let settled = try await fixture.settled(result)
            #expect(settled.state == .confirmed && settled.attempts == 3)
            // During the retries the customer already had the purchase.
            #expect(result.customer.entitlements.map(\.id) == ["pro"])
        }
    }

    @Test(arguments: TestDatabase.all) func aReceiptOfADeletedAccountIsRejectedAndWhatItGrantedIsRevoked(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            _ = try await fixture.buy("gems.100")
            _ = try await fixture.buy("pro")
            let receipt = try await fixture.receipt()
            try await fixture.simulator.appStoreConnect.deleteAccount(id: fixture.account.id)
            let result = try await fixture.server.intake.submit(
                SubmissionRequest(customerId: "mallory", receipt: receipt),
                app: fixture.app
            )
            #expect(result.customer.balances == ["gems": 100])
            let settled = try await fixture.settled(result)
            #expect(settled.state == .rejected && settled.lastStatus == "status 21010")
            let customer = try await fixture.server.customers.customer(
                bundleId: ServerFixture.bundleId,
                customerId: "mallory"
            )
            #expect(customer.entitlements.isEmpty && customer.balances == ["gems": 0])
            #expect(
                customer.purchases.allSatisfy {
                    $0.revocationReason == .rejected && $0.revocationDetail == "status 21010"
                }
            )
            // The gems' price was booked and is taken back; pro, which has no price here, booked nothing and takes
            // nothing back (it was a revocation of 0).
            let books = try await fixture.server.database.sql.raw(
                "SELECT product_id, amount, kind FROM srv_finance ORDER BY product_id, amount DESC"
            ).all().map {
                "\(try $0.decode(column: "product_id", as: String.self)) \(try $0.decode(column: "kind", as: String.self)) "
                    + "\(try $0.decode(column: "amount", as: Int64.self))"
            }
            #expect(books == ["gems.100 purchase 990", "gems.100 revocation -990"], "\(books)")
        }
    }

    @Test(arguments: TestDatabase.all) func retriesRunOutIntoTheDeadLetterQueue(_ database: TestDatabase) async throws {
        try await ServerFixture.run(
            database: database,
            confirmation: .init(maximumAttempts: 3, backoffBase: .milliseconds(20), backoffCap: .milliseconds(50))
        ) { fixture in
            _ = try await fixture.buy("pro")
            fixture.simulator.faults.add(try FaultRule(parsing: "*:verifyReceipt:outage=503"))
            let result = try await fixture.server.intake.submit(
                SubmissionRequest(customerId: "dave", receipt: try await fixture.receipt()),
                app: fixture.app
            )
            let settled = try await fixture.settled(result)
            #expect(settled.state == .deadLettered && settled.attempts == 3 && settled.lastStatus == "HTTP 503")
            // Dead-lettered is not revoked: Apple never said no.
            #expect(
                try await fixture.server.customers.customer(bundleId: ServerFixture.bundleId, customerId: "dave")
                    .entitlements
                    .map(\.id) == ["pro"]
            )
        }
    }

    /// The job's count of attempts started is the one count: the submission keeps a copy, an attempt the process
    /// stopped during counts, and a submission whose attempts never end is dead-lettered on that count.
    @Test(arguments: TestDatabase.all) func attemptsAreTheJobsCountAndOnesThatNeverEndRunOutToo(
        _ database: TestDatabase
    ) async throws {
        try await ByHand.run(database, maximumAttempts: 3) { fixture, worker, _ in
            func claim() async throws -> [ConfirmationQueue.ClaimedSubmission] { try await worker.claim() }
            func submission() async throws -> SubmissionView { try await worker.submission() }
            // The first attempt starts and never ends (the process stops during it): its claim lapses.
            #expect(try await claim().map(\.attempt) == [1])
            #expect(try await submission().attempts == 0)
            // The second is asked of Apple (503) and recorded as the second.
            let second = try #require(try await claim().first)
            #expect(second.attempt == 2)
            try await worker.attempt(second)
            let retrying = try await submission()
            #expect(retrying.state == .retrying && retrying.attempts == 2 && retrying.lastStatus == "HTTP 503")
            // The third never ends either; the fourth claim finds the attempts used up and asks Apple nothing.
            #expect(try await claim().map(\.attempt) == [3])
            #expect(try await claim().isEmpty)
            let settled = try await submission()
            #expect(settled.state == .deadLettered && settled.attempts == 3 && settled.lastStatus == "interrupted")
            #expect(settled.reason == "gave up after 3 attempts; last: interrupted")
            let depth = try await fixture.server.jobs.depth()
            #expect(depth.contains { $0.kind == .confirmation && $0.state == .deadLettered && $0.n == 1 })
            #expect(try await claim().isEmpty)
            // Dead-lettered is not revoked: Apple never said no.
            #expect(
                try await fixture.server.customers.customer(bundleId: ServerFixture.bundleId, customerId: "erin")
                    .entitlements
                    .map(\.id) == ["pro"]
            )
        }
    }

    /// An attempt whose claim lapsed while it waited on Apple, and which ends with "try again" while a later claim's
    /// attempt is under way, schedules nothing: the job stays the later attempt's (nobody claims it meanwhile, so
    /// Apple is not asked a third time), the submission is left as it was, and the attempt is kept as history. The
    /// later attempt then schedules the next.
    @Test(arguments: TestDatabase.all) func anAttemptWhoseClaimLapsedLeavesWhatComesNextToTheAttemptUnderWay(
        _ database: TestDatabase
    ) async throws {
        try await ByHand.run(database, maximumAttempts: 5) { fixture, worker, _ in
            let first = try #require(try await worker.claim().first)
            #expect(first.attempt == 1)
            // The first claim has lapsed (its lease was a millisecond); a later worker claims the job for a minute.
            try await Task.sleep(for: .milliseconds(20))
            let second = try #require(
                try await fixture.server.queue.claimDueSubmissions(limit: 10, lease: .seconds(60)).first
            )
            #expect(second.attempt == 2)
            // The first attempt ends now, with Apple's 503.
            try await worker.attempt(first)
            var submission = try await worker.submission()
            #expect(submission.state == .pending && submission.attempts == 0, "\(submission)")
            #expect(try await worker.claim().isEmpty, "the later attempt's claim was cleared")
            // The second ends, and schedules the third.
            try await worker.attempt(second)
            submission = try await worker.submission()
            #expect(submission.state == .retrying && submission.attempts == 2 && submission.lastStatus == "HTTP 503")
            #expect(try await worker.claim().map(\.attempt) == [3])
            // Both attempts are the submission's history.
            let timeline = try await fixture.server.customers.timeline(
                bundleId: ServerFixture.bundleId,
                customerId: "erin"
            )
            let lines = timeline.entries.filter { $0.kind == .submission }.flatMap(\.lines)
            #expect(lines.filter { $0.contains("HTTP 503") }.count == 2, "\(lines)")
        }
    }

    /// A confirmation worker driven by hand (the fixture's is off): claims whose lease lapses at once, and attempts
    /// that ask Apple (the simulator) through a client of their own.
    struct ByHand {
        let fixture: ServerFixture
        let id: String

        /// A server whose confirmations are driven by hand, allowing `maximumAttempts`, with erin's purchase of pro
        /// submitted while verifyReceipt answers 503 (`outage`, the fault rule).
        static func run(
            _ database: TestDatabase,
            maximumAttempts: Int,
            _ body: (ServerFixture, ByHand, FaultRule) async throws -> Void
        ) async throws {
            try await ServerFixture.run(
                database: database,
                confirmation: .init(
                    maximumAttempts: maximumAttempts,
                    backoffBase: .milliseconds(20),
                    backoffCap: .milliseconds(20)
                ),
                confirming: false
            ) { fixture in
                _ = try await fixture.buy("pro")
                let outage = try FaultRule(parsing: "*:verifyReceipt:outage=503")
                fixture.simulator.faults.add(outage)
                let result = try await fixture.server.intake.submit(
                    SubmissionRequest(customerId: "erin", receipt: try await fixture.receipt()),
                    app: fixture.app
                )
                try await body(fixture, ByHand(fixture: fixture, id: result.submission.id), outage)
            }
        }

        /// What is due after the last lease (and back-off) has passed.
        func claim() async throws -> [ConfirmationQueue.ClaimedSubmission] {
            try await Task.sleep(for: .milliseconds(60))
            return try await fixture.server.queue.claimDueSubmissions(limit: 10, lease: .milliseconds(1))
        }

        func submission() async throws -> SubmissionView {
            try await fixture.server.intake.submission(id: id, bundleId: ServerFixture.bundleId)
        }

        func attempt(_ claimed: ConfirmationQueue.ClaimedSubmission) async throws {
            let queue = fixture.server.queue
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            let client = AppleClient(
                http: http,
                endpoints: queue.configuration.apple,
                timeout: .seconds(30),
                metrics: queue.metrics
            )
            await queue.confirm(claimed, client: client)
            try await http.shutdown()
        }
    }

    /// How long Apple asks a rate-limited confirmation to wait, against the back-off's cap.
    enum RateLimit: String, CaseIterable, Sendable {
        /// Apple's time is within the cap: the next attempt waits for it, not for the 50 ms back-off.
        case withinTheCap
        /// Apple's time is past the cap: the next attempt waits for the cap.
        case pastTheCap
    }

    /// Apple's 429 says when to ask again (`Retry-After`, a UNIX time in milliseconds): the next attempt of the
    /// confirmation is scheduled then, however short the back-off, and never later than the back-off's cap.
    @Test(arguments: TestDatabase.all, RateLimit.allCases)
    func aRateLimitedConfirmationWaitsUntilAppleSaysToAskAgain(_ database: TestDatabase, _ limit: RateLimit)
        async throws
    {
        let cap: Duration = limit == .withinTheCap ? .seconds(600) : .seconds(20)
        try await ServerFixture.run(
            database: database,
            confirmation: .init(backoffBase: .milliseconds(50), backoffCap: cap),
            confirming: false
        ) { fixture in
            let purchase = try await fixture.buy("pro")
            fixture.simulator.faults.add(try FaultRule(parsing: "sandbox:serverAPI:rate-limit,for=120"))
            let result = try await fixture.server.intake.submit(
                SubmissionRequest(customerId: "gwen", signedTransaction: purchase.signedTransaction),
                app: fixture.app
            )
            let worker = ByHand(fixture: fixture, id: result.submission.id)
            let claimed = try await worker.claim()
            try #require(claimed.count == 1)
            let before = fixture.server.clock.milliseconds
            try await worker.attempt(claimed[0])
            let after = fixture.server.clock.milliseconds
            let retrying = try await worker.submission()
            #expect(retrying.state == .retrying && retrying.lastStatus?.hasPrefix("HTTP 429") == true, "\(retrying)")
            let next = try #require(retrying.nextAttemptAt)
            // The rule ends 120 s after it was added, and Apple's header says so; the cap is the most any wait is.
            let expected: Int64 = limit == .withinTheCap ? 120_000 : 20_000
            #expect(
                next >= before + expected - 2_000 && next <= after + expected,
                "the next attempt is due \(next - after) ms after the attempt, expected about \(expected) ms"
            )
            // Nothing is due before then: a claim now takes nothing.
            #expect(try await worker.claim().isEmpty)
        }
    }

    /// `Retry-After` as Apple writes it (a UNIX time in milliseconds) and as HTTP does (seconds); a time passed is no
    /// wait, and what is neither is ignored.
    @Test(arguments: [
        ("1700000030000", Duration.seconds(30)), ("1699999990000", .zero), ("120", .seconds(120)), (" 5 ", .seconds(5)),
    ])
    func retryAfterIsReadInBothForms(_ header: String, _ wait: Duration) {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(AppleClient.retryAfter(header, now: now) == wait)
    }

    @Test(arguments: ["Wed, 21 Oct 2015 07:28:00 GMT", "-5", "soon", ""])
    func aRetryAfterThatIsNoNumberIsIgnored(_ header: String) {
        #expect(AppleClient.retryAfter(header, now: Date()) == nil)
    }

    /// verifyReceipt's body writes a receipt and a shared secret as they are when JSON would not escape them (base64,
    /// base64url, hex), and through the encoder otherwise: the same JSON either way.
    @Test(arguments: [
        ("MIIT+/=abc", "0123abcdef", true), ("eyJh-_", nil, true), ("MIIT\"", "s", false), ("MIIT", "se\\cret", false),
        ("é", nil, false), ("a b", nil, false), ("", "", true),
    ])
    func theVerifyReceiptBodyIsTheEncodersJSON(_ receipt: String, _ password: String?, _ plain: Bool) throws {
        #expect((AppleClient.isPlain(receipt) && (password.map(AppleClient.isPlain) ?? true)) == plain)
        let buffer = AppleClient.verifyReceiptBody(receiptData: receipt, password: password)
        let body = Array(buffer.readableBytesView)
        let read = try JSONDecoder().decode(VerifyReceiptRequest.self, from: Data(body))
        #expect(read.receiptData == receipt && read.password == password)
    }

    /// What Apple says to a slow attempt that ends after the submission was given up.
    enum LateAnswer: String, CaseIterable, Sendable {
        case confirmed, rejected, unavailable
    }

    /// An attempt whose claim lapsed, and which ends after a later claim gave the submission up, still gives Apple's
    /// definitive answer: a confirmation or a rejection is recorded (the dead letter goes), as an operator's retry would
    /// have learned it; Apple still unavailable leaves the dead letter as it was.
    @Test(arguments: TestDatabase.all, LateAnswer.allCases)
    func applesAnswerToAnAttemptThatEndsAfterTheSubmissionWasGivenUpIsKept(
        _ database: TestDatabase,
        _ late: LateAnswer
    ) async throws {
        try await ByHand.run(database, maximumAttempts: 1) { fixture, worker, outage in
            func claim() async throws -> [ConfirmationQueue.ClaimedSubmission] { try await worker.claim() }
            func submission() async throws -> SubmissionView { try await worker.submission() }
            func entitlements() async throws -> [String] {
                try await fixture.server.customers.customer(bundleId: ServerFixture.bundleId, customerId: "erin")
                    .entitlements.map(\.id)
            }
            // The first attempt is slow: its claim lapses, and the next claim finds the one attempt allowed used.
            let slow = try #require(try await claim().first)
            #expect(try await claim().isEmpty)
            #expect(try await submission().state == .deadLettered)
            // The slow attempt ends now, with Apple's answer.
            switch late {
            case .confirmed: #expect(fixture.simulator.faults.remove(id: outage.id))
            case .rejected:
                #expect(fixture.simulator.faults.remove(id: outage.id))
                fixture.simulator.faults.add(try FaultRule(parsing: "*:verifyReceipt:status=21010"))
            case .unavailable: break
            }
            try await worker.attempt(slow)
            let after = try await submission()
            let depth = try await fixture.server.jobs.depth()
            let confirmationJobs = depth.filter { $0.kind == .confirmation && $0.n > 0 }
            switch late {
            case .confirmed:
                #expect(after.state == .confirmed && after.attempts == 1 && after.reason == nil)
                #expect(try await entitlements() == ["pro"])
                #expect(confirmationJobs.isEmpty, "\(depth)")
            case .rejected:
                #expect(after.state == .rejected && after.lastStatus == "status 21010")
                #expect(try await entitlements().isEmpty)
                #expect(confirmationJobs.isEmpty, "\(depth)")
            case .unavailable:
                #expect(after.state == .deadLettered && after.reason == "gave up after 1 attempts; last: interrupted")
                #expect(try await entitlements() == ["pro"])
                #expect(confirmationJobs.map(\.state) == [.deadLettered], "\(depth)")
                // An operator's retry of every dead letter puts it back (its rows held as it reads them).
                #expect(try await fixture.server.queueAdmin.requeueAll() == 1)
                #expect(try await submission().state == .pending)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func resendsAreIdempotentAndReplaysByAnotherCustomerAreRefused(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let purchase = try await fixture.buy("gems.100")
            let request = SubmissionRequest(
                customerId: "erin",
                signedTransaction: purchase.signedTransaction,
                idempotencyKey: "k-1"
            )
            let first = try await fixture.server.intake.submit(request, app: fixture.app)
            let second = try await fixture.server.intake.submit(request, app: fixture.app)
            #expect(first.submission.id == second.submission.id && second.customer.balances == ["gems": 100])
            // The same transaction without a key is recognised by its id: credited once.
            let third = try await fixture.server.intake.submit(
                SubmissionRequest(customerId: "erin", signedTransaction: purchase.signedTransaction),
                app: fixture.app
            )
            #expect(third.customer.balances == ["gems": 100])
            // Another customer's resend under the key is refused, never answered with erin's balances (it was, until
            // a probe of the running server found it on 2026-12-04).
            await #expect {
                _ = try await fixture.server.intake.submit(
                    SubmissionRequest(
                        customerId: "mallory",
                        signedTransaction: purchase.signedTransaction,
                        idempotencyKey: "k-1"
                    ),
                    app: fixture.app
                )
            } throws: { ($0 as? IntakeRefusal)?.reason == .idempotencyKeyReused }
            // A guest of erin's account sending it again is erin: answered as before.
            _ = try await fixture.server.customers.link(
                bundleId: ServerFixture.bundleId,
                guestId: "erin-phone",
                to: "erin"
            )
            let guest = try await fixture.server.intake.submit(
                SubmissionRequest(
                    customerId: "erin-phone",
                    signedTransaction: purchase.signedTransaction,
                    idempotencyKey: "k-1"
                ),
                app: fixture.app
            )
            #expect(guest.submission.id == first.submission.id && guest.customer.balances == ["gems": 100])
            await #expect(throws: IntakeRefusal.self) {
                _ = try await fixture.server.intake.submit(
                    SubmissionRequest(customerId: "erin", receipt: try await fixture.receipt(), idempotencyKey: "k-1"),
                    app: fixture.app
                )
            }
            await #expect(throws: IntakeRefusal.self) {
                _ = try await fixture.server.intake.submit(
                    SubmissionRequest(customerId: "frank", signedTransaction: purchase.signedTransaction),
                    app: fixture.app
                )
            }
            // A refused replay resent under its idempotency key is refused again, not answered as accepted.
            let replay = SubmissionRequest(
                customerId: "frank",
                signedTransaction: purchase.signedTransaction,
                idempotencyKey: "k-frank"
            )
            for _ in 0..<2 {
                await #expect {
                    _ = try await fixture.server.intake.submit(replay, app: fixture.app)
                } throws: { ($0 as? IntakeRefusal)?.reason == .ownedByAnotherCustomer }
            }
            #expect(
                try await fixture.server.customers.customer(bundleId: ServerFixture.bundleId, customerId: "frank")
                    .balances
                    .additionalProperties.isEmpty
            )
        }
    }

    @Test(arguments: TestDatabase.all) func forgedAndForeignDataIsRefusedBeforeAnythingIsRecorded(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let purchase = try await fixture.buy("pro")
            let jws = try #require(purchase.signedTransaction)
            let parts = jws.split(separator: ".")
            var payload = String(decoding: Base64.decode(parts[1], alphabet: .url)!, as: UTF8.self)
            payload = payload.replacingOccurrences(of: "\"pro\"", with: "\"gems.100\"")
            let forged = [String(parts[0]), Base64.encode(Array(payload.utf8), alphabet: .url), String(parts[2])]
                .joined(separator: ".")
            do {
                _ = try await fixture.server.intake.submit(
                    SubmissionRequest(customerId: "eve", signedTransaction: forged),
                    app: fixture.app
                )
                Issue.record("a forged transaction was accepted")
            } catch let error as IntakeRefusal {
                #expect(error.reason == .unverified(.verificationFailure))
            }
            let strict = try await fixture.server.catalogue.updateApp(
                bundleId: ServerFixture.bundleId,
                ServerAppInput(acceptSandbox: false)
            )
            do {
                _ = try await fixture.server.intake.submit(
                    SubmissionRequest(customerId: "eve", signedTransaction: jws),
                    app: strict
                )
                Issue.record("a sandbox transaction was accepted by an app that refuses them")
            } catch let error as IntakeRefusal {
                #expect(error.reason == .sandboxNotAccepted)
            }
            #expect(
                try await fixture.server.customers.customer(bundleId: ServerFixture.bundleId, customerId: "eve")
                    .purchases.isEmpty
            )
        }
    }
}
