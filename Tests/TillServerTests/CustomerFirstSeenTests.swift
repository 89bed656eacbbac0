import Foundation
import NIOCore
import SQLKit
import Testing
import TillAppStore
import TillContract
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// The customer answer's `firstSeen`: when the server first recorded the customer's id, and for an account the earliest
/// of its own id and of its guests' (a link moves it back), read with the alias rather than by a statement of its own.
@Suite(.sharingTheMachine)
struct CustomerFirstSeenTests {
    @Test(arguments: TestDatabase.all)
    func aCustomerIsFirstSeenAtItsFirstSubmissionAndAnAccountAtItsEarliestGuests(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database, followSimulatorClock: true) { fixture in
            let server = fixture.server
            let bundleId = ServerFixture.bundleId
            let clock = fixture.simulator.clock

            // Never recorded: no date, where the rest of the answer is an empty customer.
            #expect(try await server.customers.customer(bundleId: bundleId, customerId: "nobody").firstSeen == nil)

            // The guest's first purchase records it; the answer to that very submission says when (the simulator's
            // clock runs with real time, moved on by hours between the steps).
            let start = server.clock.milliseconds
            let guestSeen = try #require(try await submit(fixture, "gems.100", as: "guest-1").customer.firstSeen)
            #expect(guestSeen >= start && guestSeen <= server.clock.milliseconds)
            _ = clock.advance(by: 3_600)
            // A later purchase does not move it.
            #expect(try await submit(fixture, "gems.100", as: "guest-1").customer.firstSeen == guestSeen)

            // The account, recorded a day later.
            _ = clock.advance(by: 86_400)
            let accountSeen = try #require(try await submit(fixture, "pro", as: "erin").customer.firstSeen)
            #expect(accountSeen > guestSeen + 86_400_000)

            // Linked, the account was first seen when its guest was; asked by either id, and a second link keeps it.
            _ = clock.advance(by: 60)
            let linked = try await server.customers.link(bundleId: bundleId, guestId: "guest-1", to: "erin")
            #expect(linked.customerId == "erin" && linked.firstSeen == guestSeen)
            #expect(
                try await server.customers.customer(bundleId: bundleId, customerId: "guest-1").firstSeen == guestSeen
            )
            let again = try await server.customers.link(bundleId: bundleId, guestId: "guest-1", to: "erin")
            #expect(again.firstSeen == guestSeen)

            // A guest recorded after the account does not move it forward, nor does the account's next purchase.
            _ = clock.advance(by: 60)
            _ = try await submit(fixture, "gems.100", as: "guest-2")
            #expect(
                try await server.customers.link(bundleId: bundleId, guestId: "guest-2", to: "erin").firstSeen
                    == guestSeen
            )
            #expect(try await submit(fixture, "gems.100", as: "erin").customer.firstSeen == guestSeen)
            // A purchase under the guest id answers with the account, and its date.
            let underGuest = try await submit(fixture, "gems.100", as: "guest-1").customer
            #expect(underGuest.customerId == "erin" && underGuest.firstSeen == guestSeen)
            // The bytes `GET /v1/customers/{id}` answers carry it too (the generated writer).
            let body = try await server.customers.customerBody(bundleId: bundleId, customerId: "guest-2")
            let decoded = try JSONDecoder().decode(CustomerView.self, from: Data(body.readableBytesView))
            #expect(decoded.firstSeen == guestSeen)

            // An account linked to a guest that was new at the link (recorded by the link itself) keeps its own date.
            _ = clock.advance(by: 60)
            let later = try await server.customers.link(bundleId: bundleId, guestId: "device-new", to: "erin")
            #expect(later.firstSeen == guestSeen)
            // An account that the link itself records takes its older guest's date.
            let deviceSeen = try #require(try await submit(fixture, "gems.100", as: "device-3").customer.firstSeen)
            _ = clock.advance(by: 60)
            let fresh = try await server.customers.link(bundleId: bundleId, guestId: "device-3", to: "frank")
            #expect(fresh.customerId == "frank" && fresh.firstSeen == deviceSeen)

            // Credits an operator gives make a customer of an id never seen, as a grant does.
            let before = server.clock.milliseconds
            _ = try await server.ledger.adjustBalance(
                bundleId: bundleId,
                customerId: "gifted",
                credit: "gems",
                delta: 5,
                requestId: "gift-1",
                note: "a goodwill gift"
            )
            let gifted = try await server.customers.customer(bundleId: bundleId, customerId: "gifted")
            #expect(gifted.balances == ["gems": 5])
            #expect(try #require(gifted.firstSeen) >= before)
        }
    }

    /// 029: an account linked before the link moved its date back gets the earliest of its guests'; one whose guests
    /// came later, and a guest, keep theirs.
    @Test(arguments: TestDatabase.all)
    func accountsLinkedBeforeTheMigrationAreFirstSeenWhenTheirEarliestGuestWas(_ engine: TestDatabase) async throws {
        let database = try await TillDatabase.open(try await engine.fresh(prefix: "till_srv"))
        let before = ServerSchema.migrations.prefix { $0.id != "029-customers-first-seen" }
        #expect(before.count == ServerSchema.migrations.count - 1)
        try await database.migrate(Array(before), schema: ServerSchema.name)
        let db = database.sql
        for statement in [
            "INSERT INTO srv_customers VALUES ('b', 'acct', NULL, 500)",
            "INSERT INTO srv_customers VALUES ('b', 'guest-a', 'acct', 300)",
            "INSERT INTO srv_customers VALUES ('b', 'guest-b', 'acct', 100)",
            "INSERT INTO srv_customers VALUES ('b', 'guest-c', 'acct', 900)",
            "INSERT INTO srv_customers VALUES ('b', 'early', NULL, 50)",
            "INSERT INTO srv_customers VALUES ('b', 'guest-d', 'early', 70)",
            "INSERT INTO srv_customers VALUES ('other', 'acct', NULL, 400)",
        ] {
            try await db.raw(SQLQueryString(statement)).run()
        }
        try await ServerSchema.migrate(database)
        let store = CustomerStore(database: database)
        func firstSeen(_ bundleId: String, _ customerId: String) async throws -> Int64? {
            try await store.account(bundleId: bundleId, customerId: customerId, on: db).firstSeen
        }
        #expect(try await firstSeen("b", "acct") == 100)
        #expect(try await firstSeen("b", "guest-c") == 100)
        #expect(try await firstSeen("b", "early") == 50)
        #expect(try await firstSeen("other", "acct") == 400)
        let guest = try await db.raw("SELECT created_at FROM srv_customers WHERE customer_id = 'guest-c'").first()
        #expect(try guest?.decode(column: "created_at", as: Int64.self) == 900)
        try await database.shutdown()
    }

    func submit(_ fixture: ServerFixture, _ productId: String, as customerId: String) async throws
        -> SubmissionResult
    {
        let purchase = try await fixture.buy(productId)
        return try await fixture.server.intake.submit(
            SubmissionRequest(customerId: customerId, signedTransaction: purchase.signedTransaction),
            app: fixture.app
        )
    }
}
