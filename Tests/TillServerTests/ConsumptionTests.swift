import AsyncHTTPClient
import Foundation
import Hummingbird
import NIOHTTP1
import Testing
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillJobs
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillAppStore
@testable import TillServer
@testable import TillSimulator

/// Apple's consumption requests answered (docs/notifications.md, "Consumption requests"): a customer asks the
/// simulator's App Store for a refund, the simulator sends CONSUMPTION_REQUEST to the server on a port, and the
/// server answers with Send Consumption Information v2, which the simulator records as Apple would receive it.
@Suite(.sharingTheMachine)
struct ConsumptionTests {
    /// The server's two APIs on its loopback port.
    struct Live {
        var app: JSONHTTP
        var admin: JSONHTTP
    }

    /// Runs the server on a loopback port with Apple's sandbox notifications pointed at it, and its consumption
    /// worker running unless `answering` is false.
    func withServer(_ fixture: ServerFixture, answering: Bool = true, _ body: (Live) async throws -> Void)
        async throws
    {
        let server = fixture.server
        try await withServices({ report in
            Application(
                router: buildServerRouter(server),
                configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { await report($0.localAddress?.port ?? 0) }
            )
        }) { port in
            _ = try await fixture.simulator.appStoreConnect.updateApp(
                appAppleId: try #require(fixture.app.appAppleId),
                AppPatch(notificationUrlSandbox: "http://127.0.0.1:\(port)/v1/apple/notifications")
            )
            let base = "http://127.0.0.1:\(port)"
            let live = Live(
                app: JSONHTTP(base: base, token: fixture.app.appKey),
                admin: JSONHTTP(base: base, token: "operator")
            )
            guard answering else { return try await body(live) }
            try await withServices({ _ in ServiceBox(ConsumptionWorker(server: server)) }) { _ in try await body(live) }
        }
    }

    func submit(_ fixture: ServerFixture, _ purchase: QueueTransaction, as customerId: String) async throws {
        let result = try await fixture.server.intake.submit(
            SubmissionRequest(customerId: customerId, signedTransaction: purchase.signedTransaction),
            app: fixture.app
        )
        #expect(try await fixture.settled(result).state == .confirmed)
    }

    /// What the simulator's App Store received from Send Consumption Information.
    func consumptionLog(_ fixture: ServerFixture) async throws -> [SimConsumptionInfo] {
        try await fixture.simulator.serverAPI.consumptionLog(
            appAppleId: try #require(fixture.app.appAppleId),
            environment: .sandbox
        )
    }

    func body(_ entry: SimConsumptionInfo) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(entry.body.utf8)) as? [String: Any])
    }

    /// Waits until the server's answer to the request about `transactionId` reached a state it will not leave.
    func settledAnswer(_ fixture: ServerFixture, _ transactionId: String) async throws -> ConsumptionAnswer {
        var found: ConsumptionAnswer?
        try await waitUntil(timeout: .seconds(30)) {
            found = try await fixture.server.consumption.requests(bundleId: ServerFixture.bundleId, state: nil).items
                .first { $0.transactionId == transactionId }
            return found.map { ![.pending, .retrying].contains($0.state) } ?? false
        }
        return try #require(found)
    }

    func setConsent(_ live: Live, _ customer: String, _ consented: Bool) async throws {
        let reply = try await live.app.send(
            .PUT,
            "/v1/customers/\(customer)/consumption-consent",
            ["consented": consented]
        )
        #expect(reply.status == 200, "\(reply)")
        #expect(reply.object["consented"] as? Bool == consented && reply.object["customerId"] as? String == customer)
    }

    // MARK: End to end

    @Test(arguments: TestDatabase.all) func aConsentingCustomersRefundRequestIsAnsweredWithWhatTheLedgerKnows(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            try await withServer(fixture) { live in
                let patched = try await live.admin.send(
                    .PATCH,
                    "/admin/v1/apps/\(ServerFixture.bundleId)",
                    ["consumption": ["sampleContentProvided": true, "refundPreference": "DECLINE"]]
                )
                #expect(patched.status == 200, "\(patched)")
                let settings = try #require(patched.object["consumption"] as? [String: Any])
                #expect(
                    settings["sampleContentProvided"] as? Bool == true
                        && settings["refundPreference"] as? String == "DECLINE"
                )
                let gems = try await fixture.buy("gems.100")
                try await submit(fixture, gems, as: "alice")
                let debit = try await live.app.post(
                    "/v1/customers/alice/debits",
                    ["credit": "gems", "amount": 30, "requestId": "sword"]
                )
                #expect(debit.status == 200, "\(debit)")
                let never = try await live.app.get("/v1/customers/alice/consumption-consent")
                #expect(never.object["consented"] as? Bool == false && never.object["updatedAt"] == nil)
                try await setConsent(live, "alice", true)
                #expect(try await live.app.get("/v1/customers/alice/consumption-consent").object["updatedAt"] is Int)

                let gemsId = try #require(gems.transactionId)
                try await fixture.simulator.subscriptions.requestRefund(
                    transactionId: gemsId,
                    reason: .unintendedPurchase
                )
                let answer = try await settledAnswer(fixture, gemsId)
                #expect(answer.state == .sent && answer.appleStatus == 202 && answer.attempts == 1, "\(answer)")
                #expect(answer.customerId == "alice" && answer.reason == "UNINTENDED_PURCHASE")
                #expect(answer.deadline - answer.requestedAt == 12 * 3600 * 1000)

                // Apple received exactly what the server says it sent: delivered, 30 of the 100 gems spent.
                let log = try await consumptionLog(fixture)
                #expect(log.count == 1)
                let entry = try #require(log.first)
                #expect(entry.transactionId == gemsId && entry.version == 2 && entry.requestedAt != nil)
                let sent = try body(entry)
                #expect(sent["customerConsented"] as? Bool == true)
                #expect(sent["deliveryStatus"] as? String == "DELIVERED")
                #expect(sent["consumptionPercentage"] as? Int == 30_000)
                #expect(sent["sampleContentProvided"] as? Bool == true)
                #expect(sent["refundPreference"] as? String == "DECLINE")

                let listed = try await live.admin.get("/admin/v1/apps/\(ServerFixture.bundleId)/consumption-requests")
                #expect(listed.status == 200 && listed.object["total"] as? Int == 1, "\(listed)")
                let item = try #require((listed.object["items"] as? [[String: Any]])?.first)
                #expect(item["state"] as? String == "sent" && item["notificationUUID"] as? String != nil)
                let shown = try #require(item["sent"] as? [String: Any])
                #expect(
                    shown["consumptionPercentage"] as? Int == 30_000
                        && shown["deliveryStatus"] as? String == "DELIVERED"
                )
                let refused = try await live.admin.get(
                    "/admin/v1/apps/\(ServerFixture.bundleId)/consumption-requests?state=answered"
                )
                #expect(refused.status == 400 && refused.code == "invalidState")
                let none = try await live.admin.get(
                    "/admin/v1/apps/\(ServerFixture.bundleId)/consumption-requests?state=notSent"
                )
                #expect(none.object["total"] as? Int == 0)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func withoutConsentNothingIsSentToApple(_ database: TestDatabase) async throws {
        try await ServerFixture.run(database: database) { fixture in
            try await withServer(fixture) { live in
                let pro = try await fixture.buy("pro")
                try await submit(fixture, pro, as: "bob")
                // Consent given, then withdrawn: the customer's last word counts.
                try await setConsent(live, "bob", true)
                try await setConsent(live, "bob", false)
                let proId = try #require(pro.transactionId)
                try await fixture.simulator.subscriptions.requestRefund(transactionId: proId, reason: .other)
                let answer = try await settledAnswer(fixture, proId)
                #expect(answer.state == .notSent && answer.attempts == 0 && answer.sent == nil, "\(answer)")
                #expect(answer.detail?.contains("has not consented") == true)
                #expect(try await consumptionLog(fixture).isEmpty)

                // Two more requests (the customer asks again): three answers, paged newest first, none sent.
                for _ in 0..<2 {
                    try await fixture.simulator.subscriptions.requestRefund(transactionId: proId, reason: .other)
                }
                try await waitUntil(timeout: .seconds(30)) {
                    try await fixture.server.consumption.requests(bundleId: ServerFixture.bundleId, state: .notSent)
                        .total == 3
                }
                var seen: [String] = []
                var cursor: String?
                var pages = 0
                repeat {
                    let page = try await live.admin.get(
                        "/admin/v1/apps/\(ServerFixture.bundleId)/consumption-requests?limit=2"
                            + (cursor.map { "&cursor=\($0)" } ?? "")
                    )
                    #expect(page.object.keys.contains("nextCursor"), "the last page says nextCursor: null too")
                    let typed = try page.decode(Components.Schemas.ConsumptionAnswerPage.self)
                    #expect(typed.total == 3 && typed.items.allSatisfy { $0.state == .notSent })
                    seen += typed.items.map(\.notificationUUID)
                    cursor = typed.nextCursor
                    pages += 1
                } while cursor != nil && pages < 5
                #expect(pages == 2 && Set(seen).count == 3)
                #expect(try await consumptionLog(fixture).isEmpty)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func aSubscriptionIsAnsweredWithoutAPercentageAndAppleDownIsRetried(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            _ = try await fixture.server.catalogue.updateApp(
                bundleId: ServerFixture.bundleId,
                ServerAppInput(consumption: ConsumptionSettings(refundPreference: .grantProrated))
            )
            try await withServer(fixture) { live in
                let subscription = try await fixture.buy("premium.monthly")
                try await submit(fixture, subscription, as: "carol")
                try await setConsent(live, "carol", true)
                // Apple's Server API answers the next two calls with 503.
                fixture.simulator.faults.add(
                    FaultRule(environment: "Sandbox", endpoint: .serverAPI, outage: .http503, remaining: 2)
                )
                let id = try #require(subscription.transactionId)
                try await fixture.simulator.subscriptions.requestRefund(
                    transactionId: id,
                    reason: .unsatisfiedWithPurchase
                )
                let answer = try await settledAnswer(fixture, id)
                #expect(answer.state == .sent && answer.attempts == 3 && answer.appleStatus == 202, "\(answer)")
                let log = try await consumptionLog(fixture)
                #expect(log.count == 1, "two refused attempts recorded nothing, the third was taken")
                let sent = try body(try #require(log.first))
                #expect(sent["consumptionPercentage"] == nil, "Apple computes a subscription's share (4000209)")
                #expect(sent["deliveryStatus"] as? String == "DELIVERED")
                #expect(sent["refundPreference"] as? String == "GRANT_PRORATED")
                #expect(sent["sampleContentProvided"] as? Bool == false)
                let metrics = String(decoding: try await fixture.server.metricsExposition(), as: UTF8.self)
                #expect(metrics.contains(#"endpoint="consumption",environment="Sandbox",status="HTTP 503""#))
                #expect(metrics.contains(#"till_consumption_answers_total{state="retrying"} 2"#))
            }
        }
    }

    @Test(arguments: TestDatabase.all) func anAnswerStillDueWhenTheServerStopsIsSentByTheNextServer(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database, persistent: true) { fixture in
            var gemsId = ""
            // The first server records the request and stops before answering it (its worker never ran; on SQLite
            // it had even claimed the request, as a worker stopped mid-answer leaves it).
            try await withServer(fixture, answering: false) { live in
                let gems = try await fixture.buy("gems.100")
                try await submit(fixture, gems, as: "dave")
                try await setConsent(live, "dave", true)
                gemsId = try #require(gems.transactionId)
                try await fixture.simulator.subscriptions.requestRefund(
                    transactionId: gemsId,
                    reason: .fulfillmentIssue
                )
                try await waitUntil(timeout: .seconds(30)) {
                    try await fixture.server.consumption.requests(bundleId: ServerFixture.bundleId, state: .pending)
                        .total == 1
                }
            }
            if database == .sqlite {
                let held = try await fixture.server.jobs.claim(.consumptionAnswer, limit: 4, lease: .seconds(3600))
                #expect(held.count == 1)
                fixture.server.queueLock?.release()
            }
            #expect(try await consumptionLog(fixture).isEmpty)

            let next = try await PurchaseServer.open(fixture.server.configuration)
            try await withServices({ _ in ServiceBox(ConsumptionWorker(server: next)) }) { _ in
                try await waitUntil(timeout: .seconds(30)) { try await consumptionLog(fixture).count == 1 }
            }
            let answer = try #require(
                try await next.consumption.requests(bundleId: ServerFixture.bundleId, state: .sent).items.first
            )
            try await next.shutdown()
            // The attempt the stopped worker had claimed counts: the request keeps its job's count.
            let attempts = database == .sqlite ? 2 : 1
            #expect(
                answer.transactionId == gemsId && answer.attempts == attempts && answer.reason == "FULFILLMENT_ISSUE"
            )
            #expect(
                try body(try #require(try await consumptionLog(fixture).first))["consumptionPercentage"] as? Int == 0
            )
        }
    }

    /// An answer whose claim lapsed while it waited on Apple, and which ends with "try again" while a later claim's
    /// attempt is under way, changes nothing: the job stays the later attempt's, which then schedules the next.
    @Test(arguments: TestDatabase.all) func aSlowAttemptLeavesWhatComesNextToTheAttemptUnderWay(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            try await withServer(fixture, answering: false) { live in
                let gems = try await fixture.buy("gems.100")
                try await submit(fixture, gems, as: "fern")
                try await setConsent(live, "fern", true)
                try await fixture.simulator.subscriptions.requestRefund(
                    transactionId: try #require(gems.transactionId),
                    reason: .fulfillmentIssue
                )
                try await waitUntil(timeout: .seconds(30)) {
                    try await fixture.server.consumption.requests(bundleId: ServerFixture.bundleId, state: .pending)
                        .total == 1
                }
            }
            fixture.simulator.faults.add(FaultRule(environment: "Sandbox", endpoint: .serverAPI, outage: .http503))
            let answers = fixture.server.consumption
            let jobs = fixture.server.jobs
            let first = try #require(try await jobs.claim(.consumptionAnswer, limit: 4, lease: .milliseconds(1)).first)
            try await Task.sleep(for: .milliseconds(20))
            let second = try #require(try await jobs.claim(.consumptionAnswer, limit: 4, lease: .seconds(60)).first)
            #expect(first.attempts == 1 && second.attempts == 2)
            func request() async throws -> ConsumptionRequestRecord {
                try #require(
                    try await answers.consumptionStore.consumptionRequest(
                        notificationUuid: first.jobKey,
                        on: fixture.server.database.sql
                    )
                )
            }
            let client = AppleClient(
                http: .shared,
                endpoints: answers.configuration.apple,
                timeout: .seconds(30),
                metrics: answers.metrics
            )
            // The first attempt ends with Apple's 503 while the second holds the job.
            try await answers.answer(try await request(), attempt: 1, client: client)
            var now = try await request()
            #expect(now.state == .pending && now.attempts == 0, "\(now)")
            #expect(try await jobs.claim(.consumptionAnswer, limit: 4, lease: .seconds(60)).isEmpty)
            // The second ends, and schedules the third.
            try await answers.answer(now, attempt: 2, client: client)
            now = try await request()
            #expect(now.state == .retrying && now.attempts == 2 && now.appleStatus == 503, "\(now)")
            try await Task.sleep(for: .seconds(1.5))
            let third = try #require(try await jobs.claim(.consumptionAnswer, limit: 4, lease: .seconds(60)).first)
            #expect(third.attempts == 3)
            // Apple is back and takes the third attempt's answer; a slow attempt that ends after it, past the
            // deadline say, does not undo what was sent.
            fixture.simulator.faults.removeAll()
            try await answers.answer(try await request(), attempt: 3, client: client)
            var late = now
            late.deadline = 0
            try await answers.answer(late, attempt: 2, client: client)
            now = try await request()
            #expect(now.state == .sent && now.attempts == 3 && now.appleStatus == 202, "\(now)")
        }
    }

    @Test(arguments: TestDatabase.all) func appleDownPastTheDeadlineIsGivenUpAndSaysWhy(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database, followSimulatorClock: true) { fixture in
            try await withServer(fixture) { live in
                let gems = try await fixture.buy("gems.100")
                try await submit(fixture, gems, as: "erin")
                try await setConsent(live, "erin", true)
                fixture.simulator.faults.add(
                    FaultRule(environment: "Sandbox", endpoint: .serverAPI, outage: .http503, remaining: 10_000)
                )
                let id = try #require(gems.transactionId)
                try await fixture.simulator.subscriptions.requestRefund(transactionId: id, reason: .legal)
                try await waitUntil(timeout: .seconds(30)) {
                    try await fixture.server.consumption.requests(bundleId: ServerFixture.bundleId, state: .retrying)
                        .total == 1
                }
                // Thirteen hours pass (the server follows the simulator's clock) with Apple still down.
                _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 13 * 3600)
                let answer = try await settledAnswer(fixture, id)
                #expect(answer.state == .expired && answer.appleStatus == 503, "\(answer)")
                #expect(answer.detail?.contains("12-hour deadline") == true && answer.detail?.contains("503") == true)
                #expect(try await consumptionLog(fixture).isEmpty)
            }
        }
    }

    // MARK: Rules

    @Test func theShareConsumedCountsTheBalanceLeftAsThisPurchasesFirst() {
        let row = LedgerRecord(
            environment: .sandbox,
            transactionId: "1",
            bundleId: "b",
            customerId: "c",
            originalTransactionId: "1",
            productId: "gems.100",
            productType: .consumable,
            quantity: 2,
            purchaseDate: 0,
            isUpgraded: false,
            ownership: .purchased,
            submissionId: "s",
            confirmed: true,
            createdAt: 0,
            updatedAt: 0
        )
        let credits: [String: Int64] = ["gems": 100, "keys": 1]
        // 202 granted; 150 gems and 2 keys left of it: 50 of 202 spent.
        #expect(
            ConsumptionRules.consumedShare(of: row, credits: credits, balances: ["gems": 150, "keys": 2]) == 24_752
        )
        // More left than it granted (earlier purchases): nothing of this one counts as spent.
        #expect(ConsumptionRules.consumedShare(of: row, credits: credits, balances: ["gems": 900, "keys": 9]) == 0)
        // A balance below zero (credits taken back after they were spent): all of it spent.
        #expect(ConsumptionRules.consumedShare(of: row, credits: credits, balances: ["gems": -20]) == 100_000)
        #expect(ConsumptionRules.consumedShare(of: row, credits: [:], balances: [:]) == nil)
        let product = CatalogProduct(
            bundleId: "b",
            productId: "gems.100",
            type: .consumable,
            title: "Gems",
            entitlements: [],
            credits: credits,
            content: [],
            position: 0,
            createdAt: 0,
            updatedAt: 0
        )
        let settings = ConsumptionSettings(sampleContentProvided: true, refundPreference: .grantFull)
        let facts = ConsumptionRules.Facts(
            row: row,
            product: product,
            balances: ["gems": 150, "keys": 2],
            consented: true,
            settings: settings
        )
        #expect(
            ConsumptionRules.decide(facts)
                == .send(
                    ConsumptionRequest(
                        customerConsented: true,
                        sampleContentProvided: true,
                        deliveryStatus: .delivered,
                        consumptionPercentage: 24_752,
                        refundPreference: .grantFull
                    )
                )
        )
        // Apple rejected the purchase, so the ledger took back what it gave: not delivered, no share.
        var rejected = facts
        rejected.row?.revocationDate = 1
        rejected.row?.revocationReason = .rejected
        rejected.row?.revocationDetail = "status 21003"
        #expect(
            ConsumptionRules.decide(rejected)
                == .send(
                    ConsumptionRequest(
                        customerConsented: true,
                        sampleContentProvided: true,
                        deliveryStatus: .undeliveredOther,
                        refundPreference: .grantFull
                    )
                )
        )
        var family = facts
        family.row?.ownership = .familyShared
        #expect(
            ConsumptionRules.decide(family)
                == .skip("Apple takes no consumption information about family-shared purchases")
        )
    }
}
