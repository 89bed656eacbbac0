import Foundation
import Testing
import TillAppStore
import TillCatalogue
import TillContract
import TillCore
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// A link and what happens around it: another link at the same moment, a change under the guest id at the same moment
/// (on PostgreSQL's read committed: SQLite has one writer, so there the two run one after the other), and Apple's
/// confirmation or refund of a purchase the guest submitted before the link, later or at the same moment.
@Suite(.sharingTheMachine)
struct CustomerLinkTimingTests {
    /// Two links crossing (X to Y and Y to X) at once: one is made, the other refused; never a cycle of two guests.
    /// Ids new to the server (which deadlocked on PostgreSQL, each link recording one of them first) alternate with
    /// ids already recorded (whose links each passed their checks before the other wrote).
    @Test(arguments: TestDatabase.all)
    func crossingLinksMakeOneGuestAndNeverACycle(_ database: TestDatabase) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let server = fixture.server
            let bundleId = ServerFixture.bundleId
            for round in 0..<20 {
                let (x, y) = ("x-\(round)", "y-\(round)")
                if round.isMultiple(of: 2) {
                    for id in [x, y] {
                        _ = try await server.ledger.adjustBalance(
                            bundleId: bundleId,
                            customerId: id,
                            credit: "coins",
                            delta: 1,
                            requestId: "seen-\(id)",
                            note: "recorded before the links"
                        )
                    }
                }
                async let first = Self.outcome {
                    try await server.customers.link(bundleId: bundleId, guestId: x, to: y)
                }
                async let second = Self.outcome {
                    try await server.customers.link(bundleId: bundleId, guestId: y, to: x)
                }
                let outcomes = await [first, second]
                #expect(outcomes.filter { $0 == nil }.count == 1, "round \(round): one link is made")
                #expect(
                    outcomes.contains(CustomerReason.accountIsAGuest),
                    "round \(round): the other is refused, its account being the first one's guest: \(outcomes)"
                )
                let db = server.database.sql
                let store = server.ledger.customerStore
                let owners = [
                    try await store.aliasOf(bundleId: bundleId, customerId: x, on: db),
                    try await store.aliasOf(bundleId: bundleId, customerId: y, on: db),
                ]
                #expect(
                    owners.compactMap { $0 }.count == 1,
                    "round \(round): \(x) → \(owners[0] ?? "-"), \(y) → \(owners[1] ?? "-")"
                )
            }
        }
    }

    /// What a change under the guest id gives while the guest is linked ends with the account, whichever commits
    /// first: credits an operator gives, a product granted, a purchase submitted, credits the app spends. On
    /// PostgreSQL, a change that had read the guest before the link committed wrote its rows under the guest after the
    /// link had moved the guest's.
    @Test(arguments: TestDatabase.all)
    func whatAChangeUnderTheGuestGivesWhileItIsLinkedEndsWithTheAccount(_ database: TestDatabase) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let server = fixture.server
            let bundleId = ServerFixture.bundleId
            let catalogue = try await server.catalogue.products(of: bundleId)
            for round in 0..<24 {
                let (guest, account) = ("guest-\(round)", "account-\(round)")
                // The guest is known before the race (a link's own record of a new id is the other test's case).
                _ = try await server.ledger.adjustBalance(
                    bundleId: bundleId,
                    customerId: guest,
                    credit: "coins",
                    delta: 1,
                    requestId: "seen-\(round)",
                    note: "recorded before the link"
                )
                let change: @Sendable () async throws -> Void
                let expected: (balances: [String: Int64], entitlements: [String])
                switch round % 4 {
                case 0:
                    change = {
                        _ = try await server.ledger.adjustBalance(
                            bundleId: bundleId,
                            customerId: guest,
                            credit: "gems",
                            delta: 5,
                            requestId: "gift-\(round)",
                            note: "a gift"
                        )
                    }
                    expected = (["coins": 1, "gems": 5], [])
                case 1:
                    change = {
                        try await server.ledger.grant(
                            bundleId: bundleId,
                            customerId: guest,
                            productId: "pro",
                            expiresDate: nil,
                            note: "a goodwill grant",
                            app: fixture.app,
                            catalogue: catalogue
                        )
                    }
                    expected = (["coins": 1], ["pro"])
                case 2:
                    change = {
                        _ = try await server.ledger.debit(
                            bundleId: bundleId,
                            customerId: guest,
                            credit: "coins",
                            amount: 1,
                            requestId: "spend-\(round)"
                        )
                    }
                    expected = (["coins": 0], [])
                default:
                    let purchase = try await fixture.buy("gems.100")
                    change = {
                        _ = try await server.intake.submit(
                            SubmissionRequest(customerId: guest, signedTransaction: purchase.signedTransaction),
                            app: fixture.app
                        )
                    }
                    expected = (["coins": 1, "gems": 100], [])
                }
                async let changed: Void = change()
                async let linked = server.customers.link(bundleId: bundleId, guestId: guest, to: account)
                _ = try await (changed, linked)
                let customer = try await server.customers.customer(bundleId: bundleId, customerId: account)
                // A balance spent to nothing may be shown as 0 or left out.
                #expect(
                    customer.balances.additionalProperties.filter { $0.value != 0 }
                        == expected.balances.filter { $0.value != 0 },
                    "round \(round): \(customer.balances.additionalProperties)"
                )
                #expect(customer.balances.additionalProperties["coins", default: 0] == expected.balances["coins"])
                #expect(customer.entitlements.map(\.id) == expected.entitlements, "round \(round)")
            }
        }
    }

    /// A guest's subscription that Apple confirms after the guest was linked: the purchase is confirmed on the account,
    /// and the renewal Apple's answer reports (the app never sent it) is the account's too. The submission names the
    /// guest; its rows are the account's since the link. On both engines, the purchase stayed unconfirmed and the
    /// renewal was written under the guest, where the account never saw it.
    @Test(arguments: TestDatabase.all)
    func aGuestsSubscriptionConfirmedAfterItsLinkIsTheAccountsWithItsRenewals(_ database: TestDatabase) async throws {
        try await ServerFixture.run(database: database, confirming: false) { fixture in
            let bundleId = ServerFixture.bundleId
            _ = try await fixture.buy("premium.monthly")
            let result = try await fixture.server.intake.submit(
                SubmissionRequest(customerId: "phone", receipt: try await fixture.receipt()),
                app: fixture.app
            )
            _ = try await fixture.server.customers.link(bundleId: bundleId, guestId: "phone", to: "erin")
            let rows = { try await fixture.server.customers.ledgerRows(bundleId: bundleId, customerId: "erin") }
            #expect(try await rows().map(\.confirmed) == [false])

            // A sandbox month is five minutes: Apple's answer carries the renewal.
            _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
            let byHand = ConfirmationTests.ByHand(fixture: fixture, id: result.submission.id)
            for claimed in try await byHand.claim() { try await byHand.attempt(claimed) }
            #expect(try await byHand.submission().state == .confirmed)
            let confirmed = try await rows()
            #expect(confirmed.count == 2 && confirmed.allSatisfy { $0.confirmed && $0.customerId == "erin" })
            let purchases = try await fixture.server.customers.customer(bundleId: bundleId, customerId: "phone")
                .purchases
            #expect(purchases.count == 2)
            // Each of the two confirmed, as the account's.
            let events = try await EventTests.feed(fixture, customerId: "erin", type: .purchase_confirmed).items
            #expect(events.count == 2 && events.allSatisfy { $0.customer?.id == "erin" })
            // Linking again finds it linked: the same answer, nothing moved.
            let again = try await fixture.server.customers.link(bundleId: bundleId, guestId: "phone", to: "erin")
            #expect(again.purchases.count == 2)
        }
    }

    /// Apple's confirmation of a guest's purchase settled at the moment the guest is linked: whichever commits first,
    /// the purchase ends confirmed on the account, with its credits. The link starts a little later each round, so
    /// that it meets the attempt at each of its steps (asking Apple, reading the submission, writing the ledger).
    @Test(arguments: TestDatabase.all)
    func aConfirmationSettledAtTheMomentOfTheLinkEndsWithTheAccount(_ database: TestDatabase) async throws {
        try await ServerFixture.run(database: database, confirming: false) { fixture in
            let server = fixture.server
            let bundleId = ServerFixture.bundleId
            for round in 0..<12 {
                let (guest, account) = ("buyer-\(round)", "owner-\(round)")
                let purchase = try await fixture.buy("gems.100")
                let result = try await server.intake.submit(
                    SubmissionRequest(customerId: guest, signedTransaction: purchase.signedTransaction),
                    app: fixture.app
                )
                let byHand = ConfirmationTests.ByHand(fixture: fixture, id: result.submission.id)
                let claimed = try await byHand.claim()
                try #require(claimed.count == 1, "round \(round): one submission is due")
                async let confirmed: Void = byHand.attempt(claimed[0])
                async let linked: Void = Self.link(
                    server,
                    guest: guest,
                    to: account,
                    after: .milliseconds(round % 6)
                )
                _ = try await (confirmed, linked)
                #expect(try await byHand.submission().state == .confirmed, "round \(round)")
                let rows = try await server.customers.ledgerRows(bundleId: bundleId, customerId: account)
                #expect(
                    rows.count == 1 && rows.allSatisfy { $0.confirmed && $0.customerId == account },
                    "round \(round): \(rows.map { ($0.customerId, $0.confirmed) })"
                )
                let customer = try await server.customers.customer(bundleId: bundleId, customerId: account)
                #expect(customer.balances.additionalProperties == ["gems": 100], "round \(round)")
            }
            #expect(server.database.transactionsRunAgain == 0, "transactions ended by a deadlock and run again")
        }
    }

    /// Apple's refund of a guest's purchase, notified at the moment the guest is linked: whichever commits first, the
    /// account's purchase is the one refunded, and the credits it gave are taken back from the account. And the two
    /// take their locks in the same order: the notification held the purchase's row before the customer, the link the
    /// customer before the rows, and on PostgreSQL they deadlocked in up to 7 of the 12 rounds, each costing a second
    /// before PostgreSQL ended one and it ran again.
    @Test(arguments: TestDatabase.all)
    func aRefundNotifiedAtTheMomentOfTheLinkEndsWithTheAccount(_ database: TestDatabase) async throws {
        try await ServerFixture.run(database: database, confirming: false) { fixture in
            let server = fixture.server
            let bundleId = ServerFixture.bundleId
            let appAppleId = try #require(fixture.app.appAppleId)
            for round in 0..<12 {
                let (guest, account) = ("refunded-\(round)", "holder-\(round)")
                let purchase = try await fixture.buy("gems.100")
                _ = try await server.intake.submit(
                    SubmissionRequest(customerId: guest, signedTransaction: purchase.signedTransaction),
                    app: fixture.app
                )
                let transactionId = try #require(purchase.transactionId)
                _ = try await fixture.simulator.subscriptions.refund(transactionId: transactionId, reason: 1)
                let log = try await fixture.simulator.notifications.notificationLog(
                    appAppleId: appAppleId,
                    environment: .sandbox
                )
                let refund = try #require(log.last { $0.notificationType == "REFUND" })
                async let notified = server.notifications.receiveNotification(signedPayload: refund.signedPayload)
                async let linked: Void = Self.link(
                    server,
                    guest: guest,
                    to: account,
                    after: .milliseconds(round % 6)
                )
                let (result, _) = try await (notified, linked)
                #expect(result.status == .applied, "round \(round)")
                let rows = try await server.customers.ledgerRows(bundleId: bundleId, customerId: account)
                #expect(
                    rows.count == 1 && rows.allSatisfy { $0.customerId == account && $0.revocationDate != nil },
                    "round \(round): \(rows.map { ($0.customerId, $0.revocationDate) })"
                )
                let customer = try await server.customers.customer(bundleId: bundleId, customerId: account)
                #expect(customer.balances.additionalProperties["gems", default: 0] == 0, "round \(round)")
            }
            #expect(server.database.transactionsRunAgain == 0, "transactions ended by a deadlock and run again")
        }
    }

    /// Links the guest to the account after `delay`.
    static func link(_ server: PurchaseServer, guest: String, to account: String, after delay: Duration) async throws {
        try await Task.sleep(for: delay)
        _ = try await server.customers.link(bundleId: ServerFixture.bundleId, guestId: guest, to: account)
    }

    /// nil when `body` succeeds, else the refusal's reason (a database's error fails the test).
    static func outcome(_ body: () async throws -> Any) async -> CustomerReason? {
        do {
            _ = try await body()
            return nil
        } catch let refusal as CustomerRefusal {
            return refusal.reason
        } catch {
            Issue.record("not a refusal: \(error)")
            return nil
        }
    }
}
