import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import SQLKit
import ServiceLifecycle
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

extension CatchUpTests {
    /// The stored histories: each anchor (one per App Store customer) and its revision.
    func anchors(_ fixture: ServerFixture) async throws -> [String: String?] {
        let store = CatchUpStore(database: fixture.server.database)
        let rows = try await store.historyAnchors(
            bundleId: ServerFixture.bundleId,
            environment: .sandbox,
            on: store.sql
        )
        return Dictionary(uniqueKeysWithValues: rows.map { ($0.originalTransactionId, $0.revision) })
    }

    @Test(arguments: TestDatabase.all) func revisionsAreStoredAndTheNextRunAsksFromThem(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database, followSimulatorClock: true) { fixture in
            let subscription = try await fixture.buy("premium.monthly")
            let pro = try await fixture.buy("pro")
            try await submit(fixture, subscription, as: "c1")
            try await submit(fixture, pro, as: "c1")
            // A second App Store customer, on a device of their own.
            let account = try await fixture.simulator.appStoreConnect.createAccount(
                AccountInput(environment: "Sandbox")
            )
            let device = try await fixture.simulator.appStoreConnect.createDevice(accountId: account.id, DeviceInput())
            let other = try await fixture.simulator.payments.addPayment(
                PaymentRequest(deviceId: device.id, bundleId: ServerFixture.bundleId, productId: "pro"),
                environment: .sandbox
            )
            try await submit(fixture, other, as: "c2")

            let first = try sandbox(try await catchUp(fixture)).transactions
            // One history per App Store customer, not per purchase: c1's two purchases come in one.
            #expect(first.histories == 2 && first.pages == 2 && first.fetched == 3)
            #expect(first.unchanged == 3 && first.recorded == 0)
            let stored = try await anchors(fixture)
            #expect(stored.count == 2 && stored.values.allSatisfy { $0 != nil })
            #expect(try await count(fixture, "SELECT COUNT(*) AS n FROM srv_catch_up_purchases") == 3)
            let c1Anchor = try #require(
                [subscription.transactionId, pro.transactionId].compactMap { $0 }.first { stored[$0] != nil }
            )

            // Asked from the stored revisions, nothing has changed since.
            let second = try sandbox(try await catchUp(fixture)).transactions
            #expect(second.histories == 2 && second.pages == 2 && second.fetched == 0)
            #expect(try await anchors(fixture) == stored)

            // A renewal changes c1's history only: that history answers with it alone, and a new revision.
            _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
            let third = try sandbox(try await catchUp(fixture)).transactions
            #expect(third.histories == 2 && third.fetched == 1)
            let moved = try await anchors(fixture)
            #expect(moved[c1Anchor] != stored[c1Anchor])
            #expect(moved.filter { $0.key != c1Anchor } == stored.filter { $0.key != c1Anchor })
            #expect(try await customer(fixture, "c1").purchases.count == 3)
        }
    }

    @Test(arguments: TestDatabase.all) func aPurchaseSubmittedAfterItsHistoryWasReadJoinsItsCustomersHistory(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            try await submit(fixture, try await fixture.buy("premium.monthly"), as: "c1")
            #expect(try sandbox(try await catchUp(fixture)).transactions.histories == 1)
            // Bought, not yet submitted: the customer's history lists it, and no one owns it.
            let pro = try await fixture.buy("pro")
            let unsubmitted = try sandbox(try await catchUp(fixture)).transactions
            #expect(unsubmitted.fetched == 1 && unsubmitted.unmatched == 1 && unsubmitted.recorded == 0)
            #expect(try await customer(fixture, "c1").purchases.count == 1, "no customer is invented")

            // Submitted, it is a purchase no history has listed with an owner: its own history is read once, finds
            // the customer's, and joins it.
            try await submit(fixture, pro, as: "c1")
            let joining = try sandbox(try await catchUp(fixture)).transactions
            #expect(joining.histories == 2 && joining.fetched == 2)
            #expect(try await anchors(fixture).count == 1)
            let settled = try sandbox(try await catchUp(fixture)).transactions
            #expect(settled.histories == 1 && settled.fetched == 0)
            #expect(try await count(fixture, "SELECT COUNT(*) AS n FROM srv_catch_up_purchases") == 2)
        }
    }

    @Test(arguments: TestDatabase.all) func theAdminEndpointAnswersWhatWasReadAndApplied(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            try await submit(fixture, try await fixture.buy("pro"), as: "c1")
            _ = try await fixture.server.catalogue.createApp(ServerAppInput(bundleId: "com.example.nokey"))
            let path = "/admin/v1/apps/\(ServerFixture.bundleId)/catch-up"
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                let never = try await client.call(.get, path, token: "operator")
                #expect(never.status == 404 && never.code == "catchUpNeverRun")

                let reply = try await client.call(.post, path, token: "operator")
                #expect(reply.status == 200, "\(reply.object)")
                let run = try reply.decode(CatchUpRun.self)
                #expect(run.bundleId == ServerFixture.bundleId && run.trigger == .admin && run.outcome == .complete)
                #expect(run.environments.map(\.environment) == ["Production", "Sandbox"])
                let sandbox = try sandbox(run)
                #expect(sandbox.notifications.complete && sandbox.notifications.fetched == 1)  // ONE_TIME_CHARGE
                #expect(sandbox.notifications.applied == 1 && sandbox.notifications.to > sandbox.notifications.from)
                #expect(sandbox.transactions.histories == 1 && sandbox.transactions.fetched == 1)
                #expect(sandbox.transactions.unchanged == 1)
                let last = try await client.call(.get, path, token: "operator")
                #expect(last.status == 200)
                #expect(try last.decode(CatchUpRun.self) == run)

                // Refusals, each with its code.
                let anonymous = try await client.call(.post, path)
                #expect(anonymous.status == 401 && anonymous.code == "unauthorized")
                let unknown = try await client.call(
                    .post,
                    "/admin/v1/apps/com.example.none/catch-up",
                    token: "operator"
                )
                #expect(unknown.status == 404 && unknown.code == "appNotFound")
                let keyless = try await client.call(
                    .post,
                    "/admin/v1/apps/com.example.nokey/catch-up",
                    token: "operator"
                )
                #expect(keyless.status == 409 && keyless.code == "noAPIKey")
                // Another worker holds the app's catch-up job: the operator's run is refused until it ends.
                let jobs = fixture.server.jobs
                #expect(try await jobs.claim(.catchUp, key: ServerFixture.bundleId, lease: .seconds(60)) != nil)
                let busy = try await client.call(.post, path, token: "operator")
                #expect(busy.status == 409 && busy.code == "catchUpRunning")
                try await fixture.server.database.transaction { db in
                    try await jobs.finish(.catchUp, key: ServerFixture.bundleId, on: db)
                }

                // Apple down (503, then 429): the run answers, incomplete, and the checkpoint stays where it was.
                let before = try await checkpoint(fixture)
                for fault in [
                    FaultRule(environment: "Sandbox", endpoint: .serverAPI, outage: .http503),
                    FaultRule(environment: "Sandbox", endpoint: .serverAPI, rateLimited: true),
                ] {
                    fixture.simulator.faults.add(fault)
                    let down = try await client.call(.post, path, token: "operator")
                    fixture.simulator.faults.removeAll()
                    #expect(down.status == 200)
                    let downRun = try down.decode(CatchUpRun.self)
                    let failed = try self.sandbox(downRun)
                    #expect(downRun.outcome == .incomplete)
                    #expect(failed.notifications.error?.cause == .appleUnavailable && !failed.notifications.complete)
                    #expect(failed.transactions.error?.cause == .appleUnavailable && !failed.transactions.complete)
                    #expect(try await checkpoint(fixture) == before)
                }
                let metrics = String(decoding: try await fixture.server.metricsExposition(), as: UTF8.self)
                #expect(metrics.contains(#"till_catch_up_runs_total{outcome="complete"} 1"#))
                #expect(metrics.contains(#"till_catch_up_runs_total{outcome="incomplete"} 2"#))
                #expect(
                    metrics.contains(#"till_catch_up_notifications_total{environment="Sandbox",result="applied"} 1"#)
                )
                #expect(
                    metrics.contains(
                        #"till_catch_up_transactions_total{environment="Sandbox",result="unchanged"} 1"#
                    )
                )
            }
        }
    }

    @Test func theWorkerCatchesUpAtStartAndThenAtItsInterval() async throws {
        try await ServerFixture.run(configure: { $0.catchUp.interval = .seconds(4) }) { fixture in
            try await submit(fixture, try await fixture.buy("pro"), as: "c1")
            let catchUp = fixture.server.catchUp
            try await withServices({ _ in ServiceBox(CatchUpWorker(server: fixture.server)) }) { _ in
                var seen: [CatchUpRun.TriggerPayload] = []
                try await waitUntil(timeout: .seconds(60)) {
                    if let run = try? await catchUp.lastRun(bundleId: ServerFixture.bundleId),
                        seen.last != run.trigger || run.trigger == .interval
                    {
                        seen.append(run.trigger)
                    }
                    return seen.contains(.interval)
                }
                #expect(seen.first == .start, "\(seen)")
            }
            let run = try await catchUp.lastRun(bundleId: ServerFixture.bundleId)
            #expect(run.outcome == .complete)
            #expect(try sandbox(run).transactions.histories == 1)
        }
    }

    /// An App Store Server API key given or changed while the server runs (or an app created with one) brings the
    /// app's catch-up forward to now: it waited up to `catch-up.interval-seconds` (an hour by default) for its first
    /// run. A change of the shared secrets alone does not.
    @Test func anAPIKeyGivenOrChangedAfterStartCatchesUpAtOnce() async throws {
        try await ServerFixture.run(configure: { $0.catchUp.interval = .seconds(3600) }) { fixture in
            try await submit(fixture, try await fixture.buy("pro"), as: "c1")
            let catchUp = fixture.server.catchUp
            let catalogue = fixture.server.catalogue
            let later = "com.example.later"
            _ = try await catalogue.createApp(ServerAppInput(bundleId: later, sharedSecrets: ["s3cret"]))
            let appAppleId = try #require(fixture.app.appAppleId)
            /// Gives the app a new key of the simulated app.
            func newKey(_ bundleId: String) async throws {
                let key = try await fixture.simulator.appStoreConnect.createAPIKey(appAppleId: appAppleId)
                _ = try await catalogue.updateApp(
                    bundleId: bundleId,
                    ServerAppInput(apiKeyId: key.keyId, apiIssuerId: key.issuerId, apiPrivateKey: key.privateKey)
                )
            }
            try await withServices({ _ in ServiceBox(CatchUpWorker(server: fixture.server)) }) { _ in
                // At start: the app with a key; the keyless one has nothing to run.
                try await waitUntil(timeout: .seconds(60)) {
                    (try? await catchUp.lastRun(bundleId: ServerFixture.bundleId)) != nil
                }
                let first = try await catchUp.lastRun(bundleId: ServerFixture.bundleId)
                #expect(first.trigger == .start)

                // The keyless app is given one: its first run now, not an hour later.
                try await newKey(later)
                try await waitUntil(timeout: .seconds(30)) { (try? await catchUp.lastRun(bundleId: later)) != nil }
                #expect(try await catchUp.lastRun(bundleId: later).trigger == .start)

                // An app created with its key: the same.
                let created = "com.example.created"
                let createdKey = try await fixture.simulator.appStoreConnect.createAPIKey(appAppleId: appAppleId)
                _ = try await catalogue.createApp(
                    ServerAppInput(
                        bundleId: created,
                        apiKeyId: createdKey.keyId,
                        apiIssuerId: createdKey.issuerId,
                        apiPrivateKey: createdKey.privateKey
                    )
                )
                try await waitUntil(timeout: .seconds(30)) { (try? await catchUp.lastRun(bundleId: created)) != nil }

                // The first app's key changes: its periodic run comes forward.
                try await newKey(ServerFixture.bundleId)
                try await waitUntil(timeout: .seconds(30)) {
                    (try? await catchUp.lastRun(bundleId: ServerFixture.bundleId))?.startedAt ?? 0 > first.startedAt
                }
                let rotatedRun = try await catchUp.lastRun(bundleId: ServerFixture.bundleId)
                #expect(rotatedRun.trigger == .interval && rotatedRun.outcome == .complete, "\(rotatedRun)")

                // A key changed while a run is under way (Apple slow to answer it): the job is claimed, so nothing is
                // brought forward then; the run, which read with the old key, makes the next one due when it ends.
                fixture.simulator.faults.add(
                    FaultRule(endpoint: .serverAPI, latencyMinimum: 3, latencyMaximum: 3, remaining: 1)
                )
                try await newKey(ServerFixture.bundleId)
                try await Task.sleep(for: .seconds(1))
                let changedAt = fixture.server.clock.milliseconds
                try await newKey(ServerFixture.bundleId)
                try await waitUntil(timeout: .seconds(30)) {
                    (try? await catchUp.lastRun(bundleId: ServerFixture.bundleId))?.startedAt ?? 0 > changedAt
                }
                let brought = try await catchUp.lastRun(bundleId: ServerFixture.bundleId)
                #expect(brought.outcome == .complete, "\(brought)")

                // A new shared secret alone leaves the next run where it was: an hour away.
                _ = try await catalogue.updateApp(
                    bundleId: ServerFixture.bundleId,
                    ServerAppInput(sharedSecrets: ["s3cret", "n3w"])
                )
                try await Task.sleep(for: .seconds(2))
                #expect(try await catchUp.lastRun(bundleId: ServerFixture.bundleId).startedAt == brought.startedAt)
                let due = try #require(
                    try await fixture.server.database.sql.raw(
                        "SELECT due_at FROM srv_jobs WHERE kind = 'catchUp' AND job_key = \(bind: ServerFixture.bundleId)"
                    ).first()?.decode(column: "due_at", as: Int64.self)
                )
                #expect(
                    due > brought.finishedAt + 3_000_000,
                    "next run due at \(due), the run ended at \(brought.finishedAt)"
                )
            }
        }
    }
}
