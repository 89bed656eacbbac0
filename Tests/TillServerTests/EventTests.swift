import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import SQLKit
import Testing
import TillAppStore
import TillCatalogue
import TillContract
import TillCore
import TillHTTPKit
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// The event log: every change the ledger makes is one typed event written in its own transaction, the same whatever
/// told the server, read back in order from the feed (docs/events.md).
@Suite(.sharingTheMachine)
struct EventTests {
    typealias EventPage = Components.Schemas.EventPage

    static func feed(
        _ fixture: ServerFixture,
        after: String? = nil,
        limit: Int = 1000,
        customerId: String? = nil,
        type: EventType? = nil
    ) async throws -> EventPage {
        let bytes = try await fixture.server.events.feed(
            after: after,
            limit: limit,
            bundleId: ServerFixture.bundleId,
            customerId: customerId,
            type: type
        )
        return try JSONDecoder().decode(EventPage.self, from: Data(bytes))
    }

    static func events(_ fixture: ServerFixture, customerId: String? = nil) async throws -> [Event] {
        try await feed(fixture, customerId: customerId).items
    }

    func submit(_ fixture: ServerFixture, _ productId: String, as customerId: String) async throws -> SubmissionView {
        let purchase = try await fixture.buy(productId)
        let result = try await fixture.server.intake.submit(
            SubmissionRequest(customerId: customerId, signedTransaction: purchase.signedTransaction),
            app: fixture.app
        )
        return try await fixture.settled(result)
    }

    /// A non-consumable bought again by the account that owns it is handed out again for nothing, under a new
    /// transaction id naming the first: a receipt lists both, and carries no price, so the catalogue's price stood in
    /// for the second and the books counted the purchase twice.
    @Test(arguments: TestDatabase.all) func aNonConsumableHandedOutAgainBooksNoMoney(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            // The catalogue's price stands in for a receipt's, which has none.
            _ = try await fixture.server.catalogue.putProduct(
                bundleId: ServerFixture.bundleId,
                productId: "pro",
                CatalogProductInput(type: .nonConsumable, entitlements: ["pro"], price: 4990, currency: "USD")
            )
            let first = try #require(try await fixture.buy("pro").transactionId)
            let again = try #require(try await fixture.buy("pro").transactionId)
            #expect(again != first)
            let result = try await fixture.server.intake.submit(
                SubmissionRequest(customerId: "alice", receipt: try await fixture.receipt()),
                app: fixture.app
            )
            let settled = try await fixture.settled(result)
            #expect(settled.state == .confirmed && settled.transactionIds.count == 2)
            let books = try await fixture.server.database.sql.raw(
                "SELECT transaction_id, amount FROM srv_finance ORDER BY transaction_id"
            ).all().map {
                (
                    try $0.decode(column: "transaction_id", as: String.self),
                    try $0.decode(column: "amount", as: Int64.self)
                )
            }
            #expect(books.map(\.0) == [first] && books.map(\.1) == [4990], "\(books)")
            let customer = try await fixture.server.customers.customer(
                bundleId: ServerFixture.bundleId,
                customerId: "alice"
            )
            #expect(customer.entitlements.map(\.id) == ["pro"])
        }
    }

    @Test(arguments: TestDatabase.all) func aPurchaseIsOneEventAndAppleConfirmingItAnother(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            let settled = try await submit(fixture, "pro", as: "alice")
            #expect(settled.state == .confirmed)
            let events = try await Self.events(fixture)
            #expect(events.map(\._type) == [.purchase_initial, .purchase_confirmed])
            let bought = try #require(events.first)
            #expect(bought.source.kind == .submission && bought.source.id == settled.id)
            #expect(bought.environment == .sandbox && bought.price == nil, "sandbox money is no money")
            #expect(bought.customer?.id == "alice" && bought.customer?.entitlements.map(\.id) == ["pro"])
            #expect(bought.customer?.entitlements.first?.provisional == true)
            #expect(bought.product?.id == "pro" && bought.product?.entitlements == ["pro"])
            #expect(bought.transaction?.transactionId == settled.transactionIds.first)
            #expect(bought.transaction?.confirmed == false && bought.transaction?.ownership == .purchased)
            let confirmed = try #require(events.last)
            #expect(confirmed.source.kind == .confirmation && confirmed.source.id == settled.id)
            #expect(confirmed.transaction?.confirmed == true)
            #expect(confirmed.customer?.entitlements.first?.provisional == false)
            #expect(events.map(\.sequence) == events.map(\.sequence).sorted() && bought.id.hasPrefix("evt_"))
            try await EventJSONCheck.expectBodiesAreTheContractsEncoding(fixture.server)
        }
    }

    @Test(arguments: TestDatabase.all) func creditsAndDebitsCarryTheirChangeAndAFailedChangeWritesNoEvent(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            _ = try await submit(fixture, "gems.100", as: "bob")
            _ = try await fixture.server.ledger.debit(
                bundleId: ServerFixture.bundleId,
                customerId: "bob",
                credit: "gems",
                amount: 30,
                requestId: "order-1"
            )
            // Refused changes change nothing, and say nothing.
            await #expect(throws: LedgerRefusal.self) {
                _ = try await fixture.server.ledger.debit(
                    bundleId: ServerFixture.bundleId,
                    customerId: "bob",
                    credit: "gems",
                    amount: 500,
                    requestId: "order-2"
                )
            }
            // A resend moves nothing twice: no second event.
            _ = try await fixture.server.ledger.debit(
                bundleId: ServerFixture.bundleId,
                customerId: "bob",
                credit: "gems",
                amount: 30,
                requestId: "order-1"
            )
            let events = try await Self.events(fixture)
            #expect(events.map(\._type) == [.credits_purchased, .purchase_confirmed, .credits_debited])
            #expect(events[0].balanceChanges?.additionalProperties == ["gems": 100])
            #expect(events[0].customer?.balances.additionalProperties == ["gems": 100])
            let debit = events[2]
            #expect(debit.balanceChanges?.additionalProperties == ["gems": -30])
            #expect(debit.customer?.balances.additionalProperties == ["gems": 70])
            #expect(debit.source.kind == .app && debit.source.id == "order-1")
        }
    }

    @Test(arguments: TestDatabase.all) func theFeedPagesInOrderAndResumesFromItsCursor(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            for customer in ["a", "b", "c"] { _ = try await submit(fixture, "gems.100", as: customer) }
            var seen: [Int64] = []
            var cursor: String?
            var pages = 0
            repeat {
                let page = try await Self.feed(fixture, after: cursor, limit: 2)
                seen += page.items.map(\.sequence)
                cursor = page.nextCursor
                pages += 1
                if !page.hasMore { break }
            } while pages < 10
            #expect(seen.count == 6 && seen == seen.sorted() && Set(seen).count == 6)
            // The end of the feed gives its cursor too: reading from it later gives what came since, and only that.
            let end = try await Self.feed(fixture, after: cursor)
            #expect(end.items.isEmpty && end.nextCursor == cursor && !end.hasMore)
            _ = try await fixture.server.ledger.debit(
                bundleId: ServerFixture.bundleId,
                customerId: "a",
                credit: "gems",
                amount: 1,
                requestId: "r"
            )
            let next = try await Self.feed(fixture, after: cursor)
            #expect(next.items.map(\._type) == [.credits_debited])
            #expect(try await Self.feed(fixture, type: .credits_purchased).items.count == 3)
            await #expect(throws: EventRefusal.self) { _ = try await Self.feed(fixture, after: "not-a-cursor") }
            // A cursor past the last event was never given: a reader holding one would skip the events up to it.
            let last = try #require(next.items.last?.sequence)
            await #expect(throws: EventRefusal.self) { _ = try await Self.feed(fixture, after: String(last + 1)) }
            await #expect(throws: EventRefusal.self) { _ = try await Self.feed(fixture, after: "999999") }
            // The last one is a cursor, for every filter (one that matches none of the events included).
            #expect(try await Self.feed(fixture, after: String(last)).items.isEmpty)
            #expect(try await Self.feed(fixture, after: String(last), type: .purchase_refunded).items.isEmpty)
        }
    }

    @Test(arguments: TestDatabase.all) func aGuestLinkedToAnAccountIsATransferAndItsEventsJoinTheAccountsTimeline(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            _ = try await submit(fixture, "gems.100", as: "guest-1")
            _ = try await fixture.server.customers.link(
                bundleId: ServerFixture.bundleId,
                guestId: "guest-1",
                to: "carol"
            )
            let timeline = try await Self.events(fixture, customerId: "carol")
            #expect(timeline.map(\._type) == [.credits_purchased, .purchase_confirmed, .customer_transferred])
            let transfer = try #require(timeline.last)
            #expect(transfer.transfer?.fromCustomerId == "guest-1" && transfer.transfer?.toCustomerId == "carol")
            #expect(transfer.transfer?.reason == .alias && transfer.transfer?.transactionIds.count == 1)
            #expect(
                transfer.customer?.aliases == ["guest-1"]
                    && transfer.customer?.balances.additionalProperties == ["gems": 100]
            )
            // Asked by the guest id, the timeline is the account's.
            #expect(try await Self.events(fixture, customerId: "guest-1").map(\.id) == timeline.map(\.id))
        }
    }

    /// A purchase's event skips reading the guests of a customer its transaction recorded (`Admission.isNew`): only an
    /// id that very insert recorded counts as new; one recorded already, as an account or as a guest, is resolved.
    @Test(arguments: TestDatabase.all) func anIdIsNewOnlyToTheTransactionThatRecordsIt(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            let store = CustomerStore(database: fixture.server.database)
            let bundleId = ServerFixture.bundleId
            let (first, again, recordedAgain) = try await fixture.server.database.transaction { db in
                (
                    try await store.admit(bundleId: bundleId, customerId: "dora", at: 1, on: db),
                    try await store.admit(bundleId: bundleId, customerId: "dora", at: 2, on: db),
                    try await store.ensureCustomer(bundleId: bundleId, customerId: "dora", at: 3, on: db)
                )
            }
            #expect(first.isNew && first.owner == "dora")
            #expect(!again.isNew && again.owner == "dora")
            #expect(!recordedAgain)
            _ = try await fixture.server.customers.link(bundleId: bundleId, guestId: "guest-9", to: "dora")
            let guest = try await fixture.server.database.transaction { db in
                try await store.admit(bundleId: bundleId, customerId: "guest-9", at: 4, on: db)
            }
            #expect(!guest.isNew && guest.owner == "dora")
        }
    }

    @Test(arguments: TestDatabase.all) func anOperatorsGrantRevocationAndAdjustmentAreEventsWithTheirNote(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let ledger = fixture.server.ledger
            let catalogue = try await fixture.server.catalogue.products(of: ServerFixture.bundleId)
            try await ledger.grant(
                bundleId: ServerFixture.bundleId,
                customerId: "dave",
                productId: "pro",
                expiresDate: nil,
                note: "compensation for the outage, ticket 42",
                app: fixture.app,
                catalogue: catalogue
            )
            var customer = try await fixture.server.customers.customer(
                bundleId: ServerFixture.bundleId,
                customerId: "dave"
            )
            #expect(customer.entitlements.map(\.id) == ["pro"] && customer.entitlements.first?.provisional == false)
            let grant = try #require(customer.purchases.first?.transactionId)
            #expect(grant.hasPrefix("grant-"))
            _ = try await ledger.adjustBalance(
                bundleId: ServerFixture.bundleId,
                customerId: "dave",
                credit: "gems",
                delta: 50,
                requestId: "goodwill-1",
                note: "goodwill"
            )
            try await ledger.revoke(
                bundleId: ServerFixture.bundleId,
                customerId: "dave",
                transactionId: grant,
                environment: nil,
                note: "granted by mistake",
                catalogue: catalogue
            )
            customer = try await fixture.server.customers.customer(bundleId: ServerFixture.bundleId, customerId: "dave")
            #expect(customer.entitlements.isEmpty && customer.balances.additionalProperties == ["gems": 50])
            #expect(customer.purchases.first?.revocationReason == ._operator)
            #expect(customer.purchases.first?.revocationDetail == "granted by mistake")
            let events = try await Self.events(fixture, customerId: "dave")
            #expect(events.map(\._type) == [.access_granted, .credits_adjusted, .access_revoked])
            #expect(events.allSatisfy { $0.source.kind == ._operator })
            #expect(
                events.map(\.source.note) == [
                    "compensation for the outage, ticket 42", "goodwill", "granted by mistake",
                ]
            )
            #expect(events[0].price == nil, "a grant books no money")
            // No money moved for any of it.
            let money = try await fixture.server.database.sql.raw("SELECT COUNT(*) AS n FROM srv_finance").first()?
                .decode(column: "n", as: Int.self)
            #expect(money == 0)
            // A second revocation changes nothing and says nothing.
            try await ledger.revoke(
                bundleId: ServerFixture.bundleId,
                customerId: "dave",
                transactionId: grant,
                environment: nil,
                note: "again",
                catalogue: catalogue
            )
            #expect(try await Self.events(fixture, customerId: "dave").count == 3)
        }
    }
}
