import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import SQLKit
import Testing
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillAppStore
@testable import TillServer
@testable import TillSimulator

/// Catching up with Apple (docs/notifications.md, "Catching up"): what the server missed while it could not be
/// reached, or a notification Apple never managed to deliver, is read back from Notification History and the
/// customers' Transaction History, with the simulator standing in for Apple, and applied exactly once.
@Suite(.sharingTheMachine)
struct CatchUpTests {
    /// A loopback port nothing listens on: the simulator's one sandbox delivery attempt to it fails.
    static let unreachable = "http://127.0.0.1:1/v1/apple/notifications"

    /// Points the simulator's sandbox notifications at a port where no server answers.
    func makeServerUnreachable(_ fixture: ServerFixture) async throws {
        _ = try await fixture.simulator.appStoreConnect.updateApp(
            appAppleId: try #require(fixture.app.appAppleId),
            AppPatch(notificationUrlSandbox: Self.unreachable)
        )
    }

    /// Waits until the simulator tried to deliver a notification of this type and failed.
    func failedDelivery(_ type: NotificationType, _ fixture: ServerFixture) async throws -> NotificationLogEntry {
        var failed: NotificationLogEntry?
        try await waitUntil(timeout: .seconds(30)) {
            failed = try await fixture.simulator.notifications.notificationLog(
                appAppleId: try #require(fixture.app.appAppleId),
                environment: .sandbox
            ).last { $0.notificationType == type.rawValue && $0.state == .failed }
            return failed != nil
        }
        return try #require(failed)
    }

    func submit(_ fixture: ServerFixture, _ purchase: QueueTransaction, as customerId: String) async throws {
        let result = try await fixture.server.intake.submit(
            SubmissionRequest(customerId: customerId, signedTransaction: purchase.signedTransaction),
            app: fixture.app
        )
        #expect(try await fixture.settled(result).state == .confirmed)
    }

    func customer(_ fixture: ServerFixture, _ id: String) async throws -> CustomerView {
        try await fixture.server.customers.customer(bundleId: ServerFixture.bundleId, customerId: id)
    }

    func count(_ fixture: ServerFixture, _ query: SQLQueryString) async throws -> Int {
        try await fixture.server.database.sql.raw(query).first()?.decode(column: "n", as: Int.self) ?? 0
    }

    func catchUp(_ fixture: ServerFixture) async throws -> CatchUpRun {
        try await fixture.server.catchUp.run(bundleId: ServerFixture.bundleId)
    }

    func sandbox(_ run: CatchUpRun) throws -> CatchUpEnvironmentReport {
        try #require(run.environments.first { $0.environment == "Sandbox" })
    }

    func checkpoint(_ fixture: ServerFixture) async throws -> Int64? {
        let store = CatchUpStore(database: fixture.server.database)
        return try await store.notificationCheckpoint(
            bundleId: ServerFixture.bundleId,
            environment: .sandbox,
            on: store.sql
        )
    }

    /// The simulator's App Store Server API answers 503 to the next sandbox call (Apple down for one call).
    func appleFailsNextSandboxCall(_ fixture: ServerFixture) {
        fixture.simulator.faults.add(
            FaultRule(environment: "Sandbox", endpoint: .serverAPI, outage: .http503, remaining: 1)
        )
    }

    // MARK: Notification History

    @Test(arguments: TestDatabase.all) func notificationsSentWhileTheServerWasUnreachableAreAppliedOnce(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database, followSimulatorClock: true) { fixture in
            try await makeServerUnreachable(fixture)
            let subscription = try await fixture.buy("premium.monthly")
            let gems = try await fixture.buy("gems.100")
            try await submit(fixture, subscription, as: "c1")
            try await submit(fixture, gems, as: "c1")
            let gemsId = try #require(gems.transactionId)
            _ = try await fixture.simulator.subscriptions.refund(transactionId: gemsId, reason: 0)
            _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
            let renewal = try await failedDelivery(.didRenew, fixture)
            _ = try await failedDelivery(.refund, fixture)
            // Nothing reached the server: the renewal and the refund are unknown to it.
            #expect(try await customer(fixture, "c1").balances == ["gems": 100])
            #expect(try await customer(fixture, "c1").purchases.count == 2)
            #expect(try await count(fixture, "SELECT COUNT(*) AS n FROM srv_notifications") == 0)

            let first = try sandbox(try await catchUp(fixture))
            #expect(first.notifications.complete && first.notifications.error == nil)
            #expect(first.notifications.fetched >= 4, "SUBSCRIBED, the gems' purchase, DID_RENEW, REFUND")
            #expect(first.notifications.duplicate == 0 && first.notifications.refused == 0)
            #expect(first.notifications.applied + first.notifications.ignored == first.notifications.fetched)
            let renewalId = try #require(renewal.transactionId)
            var after = try await customer(fixture, "c1")
            #expect(after.balances == ["gems": 0])
            #expect(after.entitlements.map(\.id) == ["premium"] && after.entitlements.first?.transactionId == renewalId)
            #expect(after.purchases.first { $0.transactionId == gemsId }?.revocationReason == .refund)
            let recorded = try await count(fixture, "SELECT COUNT(*) AS n FROM srv_notifications")
            #expect(recorded == first.notifications.fetched)
            // The notifications came first in the run: the histories found nothing more to apply.
            #expect(first.transactions.recorded == 0 && first.transactions.revoked == 0)

            // Read again (the window overlaps the last one): every notification is a duplicate, nothing moves.
            let ledger = try await count(fixture, "SELECT COUNT(*) AS n FROM srv_transactions")
            let finance = try await count(fixture, "SELECT COUNT(*) AS n FROM srv_finance")
            let second = try sandbox(try await catchUp(fixture))
            #expect(second.notifications.complete && second.notifications.fetched == first.notifications.fetched)
            #expect(second.notifications.duplicate == second.notifications.fetched)
            #expect(second.notifications.applied == 0 && second.notifications.ignored == 0)
            #expect(second.transactions.recorded == 0 && second.transactions.revoked == 0)
            #expect(second.transactions.fetched == 0, "asked from the revision the first run stored")
            after = try await customer(fixture, "c1")
            #expect(after.balances == ["gems": 0])
            #expect(try await count(fixture, "SELECT COUNT(*) AS n FROM srv_transactions") == ledger)
            #expect(try await count(fixture, "SELECT COUNT(*) AS n FROM srv_finance") == finance)
            #expect(try await count(fixture, "SELECT COUNT(*) AS n FROM srv_notifications") == recorded)

            // Apple's delivery, when it finally comes, is a duplicate.
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                let late = try await client.call(
                    .post,
                    "/v1/apple/notifications",
                    json: #"{"signedPayload":"\#(renewal.signedPayload)"}"#
                )
                #expect(late.status == 200 && late.object["status"] as? String == "duplicate")
                #expect(late.object["notificationUUID"] as? String == renewal.notificationUUID)
            }
            #expect(try await count(fixture, "SELECT COUNT(*) AS n FROM srv_transactions") == ledger)
        }
    }

    // MARK: Transaction History

    @Test(arguments: TestDatabase.all) func aRenewalWhoseNotificationWasLostComesThroughTransactionHistory(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database, followSimulatorClock: true) { fixture in
            try await makeServerUnreachable(fixture)
            let subscription = try await fixture.buy("premium.monthly")
            try await submit(fixture, subscription, as: "c1")
            _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
            let renewalId = try #require(try await failedDelivery(.didRenew, fixture).transactionId)
            // The first period has ended and the renewal never arrived: no access.
            #expect(try await customer(fixture, "c1").entitlements.isEmpty)

            // Apple's Notification History is down for this run: only Transaction History can tell.
            appleFailsNextSandboxCall(fixture)
            let run = try await catchUp(fixture)
            let first = try sandbox(run)
            #expect(run.outcome == .incomplete)
            #expect(!first.notifications.complete && first.notifications.error?.cause == .appleUnavailable)
            #expect(first.notifications.fetched == 0)
            #expect(try await checkpoint(fixture) == nil, "the checkpoint does not move past what was not read")
            #expect(first.transactions.complete && first.transactions.error == nil)
            #expect(first.transactions.histories == 1 && first.transactions.fetched == 2)
            #expect(first.transactions.recorded == 1 && first.transactions.unchanged == 1)
            let after = try await customer(fixture, "c1")
            #expect(after.entitlements.map(\.id) == ["premium"] && after.entitlements.first?.transactionId == renewalId)
            let renewal = try #require(after.purchases.first { $0.transactionId == renewalId })
            #expect(renewal.confirmed && renewal.originalTransactionId == subscription.transactionId)
            #expect(
                try await count(
                    fixture,
                    "SELECT COUNT(*) AS n FROM srv_finance WHERE transaction_id = \(bind: renewalId) AND kind = 'purchase' AND amount = 990"
                ) == 1
            )
            let last = try await fixture.server.catchUp.lastRun(bundleId: ServerFixture.bundleId)
            #expect(last == run)

            // Apple answers again: the notifications are recovered, and the renewal is not recorded twice.
            let second = try sandbox(try await catchUp(fixture))
            #expect(second.notifications.complete && second.notifications.applied >= 2)
            #expect(try await checkpoint(fixture) != nil)
            #expect(second.transactions.fetched == 0 && second.transactions.recorded == 0)
            #expect(try await count(fixture, "SELECT COUNT(*) AS n FROM srv_transactions") == 2)
            #expect(
                try await count(
                    fixture,
                    "SELECT COUNT(*) AS n FROM srv_finance WHERE transaction_id = \(bind: renewalId)"
                )
                    == 1
            )
            #expect(try await customer(fixture, "c1").entitlements.first?.transactionId == renewalId)
        }
    }

    @Test(arguments: TestDatabase.all) func aRefundWhoseNotificationWasLostIsAppliedOnce(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            try await makeServerUnreachable(fixture)
            let pro = try await fixture.buy("pro")
            let gems = try await fixture.buy("gems.100")
            try await submit(fixture, pro, as: "c1")
            try await submit(fixture, gems, as: "c1")
            let proId = try #require(pro.transactionId)
            let gemsId = try #require(gems.transactionId)
            _ = try await fixture.simulator.subscriptions.refund(transactionId: proId, reason: 1)
            _ = try await fixture.simulator.subscriptions.refund(transactionId: gemsId, reason: 0)
            try await waitUntil(timeout: .seconds(30)) {
                try await fixture.simulator.notifications.notificationLog(
                    appAppleId: try #require(fixture.app.appAppleId),
                    environment: .sandbox
                ).filter { $0.notificationType == "REFUND" && $0.state == .failed }.count == 2
            }
            #expect(try await customer(fixture, "c1").entitlements.map(\.id) == ["pro"])

            appleFailsNextSandboxCall(fixture)
            let first = try sandbox(try await catchUp(fixture))
            #expect(!first.notifications.complete)
            #expect(first.transactions.revoked == 2 && first.transactions.recorded == 0)
            var after = try await customer(fixture, "c1")
            #expect(after.entitlements.isEmpty && after.balances == ["gems": 0])
            #expect(after.purchases.allSatisfy { $0.revocationReason == .refund && $0.revocationDate != nil })
            let refunds: SQLQueryString = "SELECT COUNT(*) AS n FROM srv_finance WHERE kind = 'refund' AND amount < 0"
            #expect(try await count(fixture, refunds) == 2)

            // The REFUND notifications, recovered now, find the refunds applied: credits and money move once.
            let second = try sandbox(try await catchUp(fixture))
            #expect(second.notifications.complete && second.notifications.applied >= 2)
            #expect(second.transactions.revoked == 0)
            after = try await customer(fixture, "c1")
            #expect(after.balances == ["gems": 0] && after.entitlements.isEmpty)
            #expect(try await count(fixture, refunds) == 2)
            #expect(
                try await count(fixture, "SELECT COUNT(*) AS n FROM srv_balance_entries WHERE delta < 0") == 1,
                "one debit of the refunded gems"
            )
        }
    }

    @Test(arguments: TestDatabase.all) func historyReadBeforeApplesLaterWordDoesNotUndoIt(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            let pro = try await fixture.buy("pro")
            try await submit(fixture, pro, as: "c1")
            let proId = try #require(pro.transactionId)
            _ = try await fixture.simulator.subscriptions.refund(transactionId: proId, reason: 1)
            let appAppleId = try #require(fixture.app.appAppleId)
            let log = try await fixture.simulator.notifications.notificationLog(
                appAppleId: appAppleId,
                environment: .sandbox
            )
            let refund = try #require(log.last { $0.notificationType == "REFUND" })
            _ = try await fixture.server.notifications.receiveNotification(signedPayload: refund.signedPayload)
            #expect(try await customer(fixture, "c1").entitlements.isEmpty)
            // Then Apple reverses the refund, and says so in a notification signed after the history the run reads
            // (the history of a run that was under way when the reversal came).
            let reversal = ResponseBodyV2DecodedPayload(
                notificationType: .refundReversed,
                notificationUUID: UUID().uuidString.lowercased(),
                version: "2.0",
                signedDate: Date().addingTimeInterval(3600),
                data: NotificationData(
                    appAppleId: fixture.app.appAppleId,
                    bundleId: ServerFixture.bundleId,
                    environment: .sandbox,
                    signedTransactionInfo: pro.signedTransaction
                )
            )
            let reversed = try await fixture.server.notifications.receiveNotification(
                signedPayload: try fixture.simulator.signer.jws.sign(reversal)
            )
            #expect(reversed.status == .applied)
            #expect(try await customer(fixture, "c1").entitlements.map(\.id) == ["pro"])

            // The history still shows the refund, signed before the reversal: it does not take access away again.
            let run = try sandbox(try await catchUp(fixture))
            #expect(run.transactions.fetched == 1 && run.transactions.revoked == 0 && run.transactions.unchanged == 1)
            #expect(try await customer(fixture, "c1").entitlements.map(\.id) == ["pro"])
            #expect(try await count(fixture, "SELECT COUNT(*) AS n FROM srv_finance WHERE kind = 'refund'") == 1)
        }
    }

    /// An operator's grant is in the ledger beside Apple's purchases, but no App Store knows its `grant-…` id: the
    /// catch-up asks Apple for the customers' histories through Apple's purchases only, and a grant keeps no run from
    /// being complete (Apple answered 4000006 for it, every run).
    @Test(arguments: TestDatabase.all) func anOperatorsGrantIsNeverAskedOfApple(_ database: TestDatabase) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let pro = try await fixture.buy("pro")
            try await submit(fixture, pro, as: "c1")
            let catalogue = try await fixture.server.catalogue.products(of: ServerFixture.bundleId)
            let grants: [(String, AppStoreEnvironment)] = [("c1", .sandbox), ("c2", .sandbox), ("c3", .production)]
            for (customer, environment) in grants {
                try await fixture.server.ledger.grant(
                    bundleId: ServerFixture.bundleId,
                    customerId: customer,
                    productId: "gems.100",
                    expiresDate: nil,
                    environment: environment,
                    note: "a goodwill gesture",
                    app: fixture.app,
                    catalogue: catalogue
                )
            }
            let run = try await catchUp(fixture)
            #expect(run.outcome == .complete, "\(run)")
            for report in run.environments {
                #expect(report.transactions.complete && report.transactions.error == nil, "\(report)")
            }
            let first = try sandbox(run)
            #expect(first.transactions.histories == 1 && first.transactions.fetched == 1, "c1's purchase of pro only")
            let second = try await catchUp(fixture)
            #expect(second.outcome == .complete, "\(second)")
        }
    }

    /// The ledger's purchases that no history lists are read a page at a time (the ledger's tables are the ledger's
    /// to read): pages that end on a page's edge, or in the middle, find what one page finds.
    @Test(arguments: TestDatabase.all) func purchasesOutsideHistoriesAreFoundAcrossPages(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            for _ in 0..<5 { try await submit(fixture, try await fixture.buy("gems.100"), as: "c1") }
            let store = CatchUpStore(database: fixture.server.database)
            let all = try await store.purchasesOutsideHistories(
                bundleId: ServerFixture.bundleId,
                environment: .sandbox,
                on: store.sql
            )
            #expect(all.count == 5 && all == all.sorted(), "\(all)")
            for listed in [all[1], all[4]] {
                try await store.sql.raw(
                    """
                    INSERT INTO srv_catch_up_purchases
                        (bundle_id, environment, original_transaction_id, anchor, revision, updated_at)
                    VALUES (\(bind: ServerFixture.bundleId), 'Sandbox', \(bind: listed), \(bind: listed), NULL, 1)
                    """
                ).run()
            }
            for pageSize in [1, 2, 3, 1000] {
                let outside = try await store.purchasesOutsideHistories(
                    bundleId: ServerFixture.bundleId,
                    environment: .sandbox,
                    pageSize: pageSize,
                    on: store.sql
                )
                #expect(outside == [all[0], all[2], all[3]], "pages of \(pageSize): \(outside)")
            }
        }
    }
}
