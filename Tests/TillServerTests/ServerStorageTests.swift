import Foundation
import Logging
import SQLKit
import ServiceLifecycle
import Testing
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillAppStore
@testable import TillServer
@testable import TillSimulator

/// The server's storage, end to end, on SQLite and PostgreSQL: the same code must give the same answers.
@Suite(.sharingTheMachine, .serialized)
struct ServerStorageTests {
    @Test(arguments: TestDatabase.all)
    func theWholePurchaseLifeWorksOnEachDatabase(_ engine: TestDatabase) async throws {
        do { try await life(engine) } catch { Issue.record("\(String(reflecting: error))"); throw error }
    }

    func life(_ engine: TestDatabase) async throws {
        try await ServerFixture.run(database: engine) { fixture in
            let server = fixture.server
            // A StoreKit 2 purchase and an app receipt, confirmed with the simulator.
            let pro = try await fixture.buy("pro")
            let first = try await server.intake.submit(
                SubmissionRequest(customerId: "guest-1", signedTransaction: pro.signedTransaction),
                app: fixture.app
            )
            #expect(try await fixture.settled(first).state == .confirmed)
            _ = try await fixture.buy("gems.100", quantity: 2)
            let receipt = try await fixture.receipt()
            let second = try await server.intake.submit(
                SubmissionRequest(customerId: "guest-1", receipt: receipt, idempotencyKey: "r-1"),
                app: fixture.app
            )
            #expect(try await fixture.settled(second).state == .confirmed)
            // A resend changes nothing.
            let again = try await server.intake.submit(
                SubmissionRequest(customerId: "guest-1", receipt: receipt, idempotencyKey: "r-1"),
                app: fixture.app
            )
            #expect(again.submission.id == second.submission.id)

            var customer = try await server.customers.customer(bundleId: ServerFixture.bundleId, customerId: "guest-1")
            #expect(customer.entitlements.map(\.id) == ["pro"] && customer.balances == ["gems": 200])
            #expect(customer.purchases.allSatisfy { $0.confirmed })

            // Spend, idempotently, never below zero.
            let balances = try await server.ledger.debit(
                bundleId: ServerFixture.bundleId,
                customerId: "guest-1",
                credit: "gems",
                amount: 150,
                requestId: "spend-1"
            )
            #expect(balances["gems"] == 50)
            #expect(
                try await server.ledger.debit(
                    bundleId: ServerFixture.bundleId,
                    customerId: "guest-1",
                    credit: "gems",
                    amount: 150,
                    requestId: "spend-1"
                )["gems"] == 50
            )
            await #expect(throws: LedgerRefusal.self) {
                try await server.ledger.debit(
                    bundleId: ServerFixture.bundleId,
                    customerId: "guest-1",
                    credit: "gems",
                    amount: 51,
                    requestId: "spend-2"
                )
            }

            // The guest signs in: everything moves once.
            customer = try await server.customers.link(
                bundleId: ServerFixture.bundleId,
                guestId: "guest-1",
                to: "alice"
            )
            #expect(customer.customerId == "alice" && customer.balances == ["gems": 50])
            customer = try await server.customers.link(
                bundleId: ServerFixture.bundleId,
                guestId: "guest-1",
                to: "alice"
            )
            #expect(customer.balances == ["gems": 50])

            // Restore returns what is restorable, never the consumables.
            let restored = try await server.intake.restore(
                SubmissionRequest(customerId: "alice", receipt: try await fixture.receipt()),
                app: fixture.app
            )
            #expect(Set(restored.restored.map(\.productId)) == ["pro"])

            // Another customer replaying the purchase is refused.
            await #expect(throws: IntakeRefusal.self) {
                try await server.intake.submit(
                    SubmissionRequest(customerId: "mallory", signedTransaction: pro.signedTransaction),
                    app: fixture.app
                )
            }
            // The operator's reads: sandbox never counts as revenue; nothing is dead-lettered.
            for groupBy in RevenueReport.GroupByPayload.allCases {
                let report = try await server.figures.revenue(
                    bundleId: nil,
                    from: 0,
                    to: Int64.max / 2,
                    groupBy: groupBy
                )
                #expect(report.rows.isEmpty)
            }
            #expect(try await server.queueAdmin.submissions(state: .deadLettered).items.isEmpty)
            #expect(try await server.catalogue.masterList(bundleId: ServerFixture.bundleId).products.count == 4)
            let rows = try await server.database.sql.raw("SELECT COUNT(*) AS n FROM srv_transactions").first()
            #expect(try rows?.decode(column: "n", as: Int.self) == 2)
        }
    }

    /// Several `till serve` processes on one PostgreSQL database share the queue: every submission is tried
    /// by exactly one of them (`FOR UPDATE SKIP LOCKED`), and all are confirmed.
    @Test(.enabled(if: Prerequisite.postgres.shouldRun, Comment(rawValue: Prerequisite.postgres.skipMessage)))
    func serversSharingOnePostgresDatabaseConfirmEachSubmissionOnce() async throws {
        let count = 40
        try await ServerFixture.run(database: .postgres) { fixture in
            let other = try await PurchaseServer.open(fixture.server.configuration)
            // Both servers accept submissions and both workers claim from the one queue.
            var requests: [SubmissionRequest] = []
            for index in 0..<count {
                let purchase = try await fixture.buy("gems.100")
                requests.append(
                    SubmissionRequest(customerId: "c\(index % 7)", signedTransaction: purchase.signedTransaction)
                )
            }
            try await withServices({ _ in ServiceBox(ConfirmationWorker(server: other)) }) { _ in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (index, request) in requests.enumerated() {
                        let server = index.isMultiple(of: 2) ? fixture.server : other
                        group.addTask { _ = try await server.intake.submit(request, app: fixture.app) }
                    }
                    try await group.waitForAll()
                }
                let deadline = ContinuousClock.now + .seconds(30)
                while ContinuousClock.now < deadline {
                    let pending = try await fixture.server.database.sql.raw(
                        "SELECT COUNT(*) AS n FROM srv_submissions WHERE state <> 'confirmed'"
                    ).first()?.decode(column: "n", as: Int.self)
                    if pending == 0 { break }
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            let states = try await fixture.server.database.sql.raw(
                "SELECT state, attempts FROM srv_submissions"
            ).all()
            #expect(states.count == count)
            for row in states {
                #expect(try row.decode(column: "state", as: String.self) == "confirmed")
                #expect(try row.decode(column: "attempts", as: Int.self) == 1)
            }
            // Each attempt is counted by the process that made it: together, exactly one per submission.
            let attempts = [fixture.server, other].map { server in
                String(decoding: server.metrics.emit(), as: UTF8.self).split(separator: "\n")
                    .filter { $0.hasPrefix("till_confirmations_total{") }
                    .compactMap { Int($0.split(separator: " ").last ?? "") }.reduce(0, +)
            }
            #expect(attempts.reduce(0, +) == count)
            let balances = try await fixture.server.database.sql.raw(
                "SELECT CAST(SUM(delta) AS BIGINT) AS total FROM srv_balance_entries"
            ).first()?.decode(column: "total", as: Int.self)
            #expect(balances == count * 100)
            try await other.shutdown()
        }
    }

    /// Submissions stored before their receipts had a table of their own keep their receipts, and can still be
    /// confirmed: the migration moves each one.
    @Test(arguments: TestDatabase.all)
    func receiptsStoredInSubmissionRowsMoveToTheirOwnTable(_ engine: TestDatabase) async throws {
        let database = try await TillDatabase.open(try await engine.fresh(prefix: "till_srv"))
        let before = ServerSchema.migrations.prefix { $0.id != "005-submission-payloads" }
        #expect(ServerSchema.migrations[before.count].id == "005-submission-payloads")
        try await database.migrate(Array(before), schema: ServerSchema.name)
        try await database.sql.raw(
            """
            INSERT INTO srv_submissions (id, bundle_id, customer_id, kind, payload, environment, state,
                attempts, next_attempt_at, transaction_ids, created_at, updated_at)
            VALUES ('s-old', 'b', 'c', 'appReceipt', 'the receipt', 'Sandbox', 'retrying', 1, 0, '[]', 0, 0)
            """
        ).run()
        try await ServerSchema.migrate(database)
        let store = PurchaseStore(database: database)
        #expect(
            try await SubmissionStore(database: database).payload(submissionId: "s-old", on: database.sql)
                == "the receipt"
        )
        let moved = try await SubmissionStore(database: database).submission(id: "s-old", on: database.sql)
        #expect(moved?.state == .retrying)
        // The row no longer carries it: claims and settlements rewrite a small row.
        await #expect(throws: (any Error).self) {
            try await database.sql.raw("SELECT payload FROM srv_submissions").run()
        }
        try await database.shutdown()
    }
}

/// A submission's answer is written by hand for speed; it must be what the response encoder writes.
@Suite struct SubmissionAnswerJSONTests {
    @Test func theAnswerIsWrittenAsTheResponseEncoderWritesIt() throws {
        let awkward = "quote \" backslash \\ slash / newline \n control \u{01} é"
        let customer = CustomerView(
            customerId: awkward,
            entitlements: [
                Entitlement(
                    id: "pro",
                    productId: "pro.monthly",
                    transactionId: "t1",
                    environment: "Sandbox",
                    expiresDate: 1_800_000_000_000,
                    provisional: true
                ),
                Entitlement(
                    id: "maps",
                    productId: "maps",
                    transactionId: "t2",
                    environment: "Production",
                    expiresDate: nil,
                    provisional: false
                ),
            ],
            balances: ["gems": 100, "coins": 0],
            purchases: [
                PurchaseView(
                    transactionId: "t1",
                    originalTransactionId: "t0",
                    productId: "pro.monthly",
                    productType: .autoRenewable,
                    environment: "Sandbox",
                    quantity: 1,
                    purchaseDate: 1_700_000_000_000,
                    expiresDate: 1_800_000_000_000,
                    revocationDate: 1_750_000_000_000,
                    revocationReason: .refund,
                    confirmed: false,
                    billingPlanType: "MONTHLY",
                    commitment: .init(billingPeriodNumber: 2, totalBillingPeriods: 12, expiresDate: 1_831_536_000_000)
                ),
                PurchaseView(
                    transactionId: "t2",
                    originalTransactionId: "t2",
                    productId: "maps",
                    productType: nil,
                    environment: "Production",
                    quantity: 3,
                    purchaseDate: 1_700_000_000_001,
                    expiresDate: nil,
                    revocationDate: nil,
                    revocationReason: nil,
                    confirmed: true
                ),
            ],
            subscriptions: [
                SubscriptionStateView(
                    originalTransactionId: "t0",
                    environment: "Sandbox",
                    productId: "pro.monthly",
                    autoRenewProductId: "pro.yearly",
                    autoRenewStatus: true,
                    status: "gracePeriod",
                    expiresDate: 1_800_000_000_000,
                    isInBillingRetryPeriod: true,
                    gracePeriodExpiresDate: 1_800_100_000_000,
                    expirationIntent: 2,
                    renewalDate: 1_800_000_000_000,
                    priceIncreaseStatus: 1,
                    billingPlanType: "MONTHLY",
                    commitment: .init(
                        renewalDate: 1_831_536_000_000,
                        autoRenewStatus: false,
                        autoRenewProductId: "pro.yearly",
                        renewalBillingPlanType: "MONTHLY",
                        renewalPrice: 13_080,
                        currency: "EUR"
                    ),
                    lastNotificationType: "DID_FAIL_TO_RENEW",
                    updatedAt: 1_700_000_000_002
                ),
                SubscriptionStateView(
                    originalTransactionId: "t9",
                    environment: "Production",
                    productId: nil,
                    autoRenewProductId: nil,
                    autoRenewStatus: nil,
                    status: nil,
                    expiresDate: nil,
                    isInBillingRetryPeriod: false,
                    gracePeriodExpiresDate: nil,
                    expirationIntent: nil,
                    renewalDate: nil,
                    priceIncreaseStatus: nil,
                    lastNotificationType: nil,
                    updatedAt: 0
                ),
            ]
        )
        let submission = SubmissionView(
            id: "s1",
            state: .retrying,
            kind: .appReceipt,
            environment: "Sandbox",
            customerId: "c1",
            transactionIds: ["t1", "t2"],
            attempts: 2,
            nextAttemptAt: 1_700_000_100_000,
            lastStatus: "status 21005",
            lastError: "the receipt server is not available",
            reason: "why",
            createdAt: 1_700_000_000_000,
            confirmedAt: 1_700_000_200_000
        )
        let bare = SubmissionView(
            id: "s2",
            state: .pending,
            kind: .signedTransaction,
            environment: "Production",
            customerId: "c2",
            transactionIds: [],
            attempts: 0,
            nextAttemptAt: nil,
            lastStatus: nil,
            lastError: nil,
            reason: nil,
            createdAt: 0,
            confirmedAt: nil
        )
        let results = [
            SubmissionResult(
                submission: submission,
                customer: customer,
                refused: [RefusedTransaction(transactionId: "t3", reason: "ownedByAnotherCustomer")],
                signedSnapshot: "a.b.c"
            ),
            SubmissionResult(
                submission: bare,
                customer: CustomerView(
                    customerId: "c2",
                    entitlements: [],
                    balances: [:],
                    purchases: [],
                    subscriptions: []
                ),
                refused: []
            ),
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for result in results {
            #expect(
                String(decoding: result.json(), as: UTF8.self)
                    == String(decoding: try encoder.encode(result), as: UTF8.self)
            )
            // The contract's generated types read back every field the writer wrote (the customer body of
            // GET /v1/customers/{customer} is the same writer, alone).
            #expect(
                try JSONDecoder().decode(Components.Schemas.SubmissionResult.self, from: Data(result.json())) == result
            )
            var writer = JSONWriter()
            result.customer.writeJSON(to: &writer)
            #expect(
                try JSONDecoder().decode(Components.Schemas.Customer.self, from: Data(writer.bytes)) == result.customer
            )
        }
    }
}
