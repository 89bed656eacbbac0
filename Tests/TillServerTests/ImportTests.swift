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
import TillLedger
import TillStorage
import TillTestSupport
import TillWebhooks

@testable import TillAppStore
@testable import TillServer
@testable import TillSimulator

/// Importing the customers an app already has (docs/operations.md, "Importing existing customers"): a file of
/// customers and what finds their purchases, each customer's Transaction History read from the simulator standing in
/// for Apple, and every transaction recorded once, for that customer, through the ledger.
@Suite(.sharingTheMachine)
struct ImportTests {
    /// Imports that ask the simulator as fast as it answers, and retry a row within milliseconds.
    static func fast(_ configuration: inout ServerConfiguration) {
        configuration.imports = ImportSettings(
            requestsPerSecond: [.production: 2000, .sandbox: 2000],
            maximumAttempts: 3,
            backoffBase: .milliseconds(20),
            backoffCap: .milliseconds(100)
        )
    }

    /// A new sandbox account of the simulator with a device, and what it bought.
    struct Buyer {
        var device: SimDevice
        var purchases: [QueueTransaction]
    }

    func buyer(_ fixture: ServerFixture, buying products: [String]) async throws -> Buyer {
        let account = try await fixture.simulator.appStoreConnect.createAccount(AccountInput(environment: "Sandbox"))
        let device = try await fixture.simulator.appStoreConnect.createDevice(accountId: account.id, DeviceInput())
        var purchases: [QueueTransaction] = []
        for product in products {
            purchases.append(
                try await fixture.simulator.payments.addPayment(
                    PaymentRequest(deviceId: device.id, bundleId: ServerFixture.bundleId, productId: product),
                    environment: .sandbox
                )
            )
        }
        return Buyer(device: device, purchases: purchases)
    }

    func count(_ fixture: ServerFixture, _ query: SQLQueryString) async throws -> Int {
        try await fixture.server.database.sql.raw(query).first()?.decode(column: "n", as: Int.self) ?? 0
    }

    func customer(_ fixture: ServerFixture, _ id: String) async throws -> CustomerView {
        try await fixture.server.customers.customer(bundleId: ServerFixture.bundleId, customerId: id)
    }

    /// Sends `file` to the admin API as `till import` does.
    func post(_ fixture: ServerFixture, _ file: String, contentType: String = "text/csv") async throws -> HTTPReply {
        try await Application(router: buildServerRouter(fixture.server)).test(.router) { client in
            try await client.call(
                .post,
                "/admin/v1/apps/\(ServerFixture.bundleId)/imports?name=customers.csv",
                bytes: Array(file.utf8),
                token: "operator",
                headers: [.contentType: contentType]
            )
        }
    }

    func get(_ fixture: ServerFixture, _ path: String) async throws -> HTTPReply {
        try await Application(router: buildServerRouter(fixture.server)).test(.router) { client in
            try await client.call(.get, "/admin/v1/apps/\(ServerFixture.bundleId)/imports\(path)", token: "operator")
        }
    }

    /// Starts an import of `file` through the admin API and runs the import worker until it has finished.
    func imported(_ fixture: ServerFixture, _ file: String) async throws -> ImportView {
        let started = try await post(fixture, file)
        #expect(started.status == 202, "\(started.object)")
        let id = try started.decode(ImportView.self).id
        return try await finished(fixture, id)
    }

    func finished(_ fixture: ServerFixture, _ id: String) async throws -> ImportView {
        var view: ImportView?
        try await withServices({ _ in ServiceBox(ImportWorker(server: fixture.server)) }) { _ in
            try await waitUntil(timeout: .seconds(60)) {
                view = try await fixture.server.imports.view(id: id, bundleId: ServerFixture.bundleId)
                return view?.state == .finished
            }
        }
        return try #require(view)
    }

    // MARK: Importing

    @Test(arguments: TestDatabase.all) func everyKindOfRowIsImportedOnceAndAgainChangesNothing(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database, configure: Self.fast) { fixture in
            let alice = try await buyer(fixture, buying: ["premium.monthly", "gems.100"])
            let bob = try await buyer(fixture, buying: ["pro"])
            let carol = try await buyer(fixture, buying: ["gems.100", "gems.100"])
            let dave = try await buyer(fixture, buying: ["issue.1"])
            // Dave's purchase is his already: a row naming another customer for it changes nothing.
            let daves = try #require(dave.purchases.first)
            let submitted = try await fixture.server.intake.submit(
                SubmissionRequest(customerId: "dave", signedTransaction: daves.signedTransaction),
                app: fixture.app
            )
            #expect(try await fixture.settled(submitted).state == .confirmed)
            let receipt = Base64.encode(
                try await fixture.simulator.payments.appReceipt(
                    deviceId: carol.device.id,
                    bundleId: ServerFixture.bundleId,
                    environment: .sandbox
                )
            )
            let alicesId = try #require(alice.purchases[1].transactionId)
            let bobs = try #require(bob.purchases[0].signedTransaction)
            let file = """
                customerId,transactionId,appReceipt,signedTransaction
                alice,\(alicesId),,
                bob,,,\(bobs)
                carol,,\(receipt),
                erin,\(try #require(daves.transactionId)),,
                frank,2000000999999999,,
                ,\(alicesId),,
                grace,\(alicesId),,\(bobs)
                """
            let events = try await count(fixture, "SELECT COUNT(*) AS n FROM srv_events")
            let first = try await imported(fixture, file)
            #expect(first.rows.total == 7 && first.rows.done == 7 && first.rows.pending == 0)
            #expect(first.rows.imported == 3 && first.rows.alreadyKnown == 0)
            #expect(first.rows.refused == 4 && first.rows.failed == 0)
            #expect(
                Dictionary(uniqueKeysWithValues: first.refusedBy.map { ($0.reason, $0.count) }) == [
                    .ownedByAnotherCustomer: 1, .notFound: 1, .invalidCustomerId: 1, .invalidRow: 1,
                ]
            )
            #expect(first.transactions.recorded == 5 && first.transactions.ownedByAnotherCustomer == 1)
            #expect(first.name == "customers.csv" && first.finishedAt != nil)

            // Each customer has what their App Store account bought, confirmed.
            let alicesView = try await customer(fixture, "alice")
            #expect(alicesView.entitlements.map(\.id) == ["premium"] && alicesView.balances == ["gems": 100])
            #expect(alicesView.purchases.count == 2 && alicesView.purchases.allSatisfy(\.confirmed))
            #expect(try await customer(fixture, "bob").entitlements.map(\.id) == ["pro"])
            #expect(try await customer(fixture, "carol").balances == ["gems": 200])
            #expect(try await customer(fixture, "dave").entitlements.map(\.id) == ["issue-1"])
            #expect(try await customer(fixture, "erin").purchases.isEmpty)
            // Their events say they came from the import.
            let importEvents = try await count(
                fixture,
                "SELECT COUNT(*) AS n FROM srv_events WHERE source = 'import' AND sequence > \(bind: events)"
            )
            #expect(importEvents > 0)
            #expect(
                try await count(
                    fixture,
                    "SELECT COUNT(*) AS n FROM srv_events WHERE source <> 'import' AND sequence > \(bind: events)"
                ) == 0
            )

            // The rows say what became of each.
            let refused = try await get(fixture, "/\(first.id)/rows?outcome=refused")
            let rows = try refused.decode(Components.Schemas.ImportRowPage.self)
            #expect(rows.total == 4 && rows.items.map(\.row) == [4, 5, 6, 7])
            #expect(rows.items[0].reason == .ownedByAnotherCustomer && rows.items[1].reason == .notFound)
            #expect(
                rows.items[1].detail?.contains("Production nor Sandbox") == true,
                "production first, then the sandbox"
            )
            let all = try await get(fixture, "/\(first.id)/rows?limit=2")
            let page = try all.decode(Components.Schemas.ImportRowPage.self)
            #expect(page.total == 7 && page.items.map(\.row) == [1, 2] && page.nextCursor != nil)
            let next = try await get(fixture, "/\(first.id)/rows?limit=2&cursor=\(try #require(page.nextCursor))")
            #expect(try next.decode(Components.Schemas.ImportRowPage.self).items.map(\.row) == [3, 4])

            // The same file again: a new import, and nothing changes.
            let tables = ["srv_transactions", "srv_events", "srv_finance", "srv_balances", "srv_customers"]
            var before: [String: Int] = [:]
            for table in tables {
                before[table] = try await count(fixture, "SELECT COUNT(*) AS n FROM \(unsafeRaw: table)")
            }
            let second = try await imported(fixture, file)
            #expect(second.id != first.id)
            #expect(second.rows.imported == 0 && second.rows.alreadyKnown == 3 && second.rows.refused == 4)
            #expect(second.transactions.recorded == 0 && second.transactions.unchanged == 5)
            for table in tables {
                #expect(
                    try await count(fixture, "SELECT COUNT(*) AS n FROM \(unsafeRaw: table)") == before[table],
                    "\(table)"
                )
            }
            let list = try await get(fixture, "")
            #expect(try list.decode(Components.Schemas.ImportPage.self).items.map(\.id) == [second.id, first.id])

            // The catch-up reads each imported history from where the import left it (nothing new there), and Dave's,
            // which no import read: nothing more to record.
            let run = try await fixture.server.catchUp.run(bundleId: ServerFixture.bundleId)
            let sandbox = try #require(run.environments.first { $0.environment == "Sandbox" })
            #expect(sandbox.transactions.recorded == 0)
            #expect(sandbox.transactions.histories == 4 && sandbox.transactions.fetched == 1, "\(sandbox.transactions)")
        }
    }

    @Test(arguments: TestDatabase.all) func appleUnavailableIsRetriedAndThenFailsTheRow(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database, configure: Self.fast) { fixture in
            let alice = try await buyer(fixture, buying: ["pro"])
            let bob = try await buyer(fixture, buying: ["gems.100"])
            // Two 503s and two 429s: within three attempts, and a 429 is not an attempt.
            fixture.simulator.faults.add(
                FaultRule(environment: "Sandbox", endpoint: .serverAPI, outage: .http503, remaining: 2)
            )
            fixture.simulator.faults.add(
                FaultRule(environment: "Sandbox", endpoint: .serverAPI, rateLimited: true, remaining: 2)
            )
            let alices = try #require(alice.purchases[0].signedTransaction)
            let first = try await imported(
                fixture,
                """
                {"customerId":"alice","signedTransaction":"\(alices)"}
                {"customerId":"bob","transactionId":"\(try #require(bob.purchases[0].transactionId))"}
                """
            )
            #expect(first.rows.imported == 2 && first.rows.failed == 0, "\(first)")
            #expect(try await customer(fixture, "alice").entitlements.map(\.id) == ["pro"])

            // Apple down for longer than the attempts: the row fails, and a new import of the file brings it.
            let carol = try await buyer(fixture, buying: ["pro"])
            let carols = "customerId,signedTransaction\ncarol,\(try #require(carol.purchases[0].signedTransaction))\n"
            fixture.simulator.faults.add(
                FaultRule(environment: "Sandbox", endpoint: .serverAPI, outage: .http503, remaining: 3)
            )
            let failed = try await imported(fixture, carols)
            #expect(failed.rows.failed == 1 && failed.refusedBy.map(\.reason) == [.appleUnavailable])
            let row = try #require(
                try await get(fixture, "/\(failed.id)/rows").decode(Components.Schemas.ImportRowPage.self).items.first
            )
            #expect(row.attempts == 3 && row.detail?.contains("503") == true)
            #expect(try await customer(fixture, "carol").purchases.isEmpty)
            let again = try await imported(fixture, carols)
            #expect(again.rows.imported == 1)
            #expect(try await customer(fixture, "carol").entitlements.map(\.id) == ["pro"])
        }
    }

    // MARK: The console

    @Test(arguments: TestDatabase.all) func theConsoleShowsAnImportsProgressAndCancelsOne(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database, configure: Self.fast) { fixture in
            let app = ServerFixture.bundleId
            let alice = try await buyer(fixture, buying: ["pro"])
            let alicesId = try #require(alice.purchases[0].transactionId)
            let done = try await imported(fixture, "customerId,transactionId\nalice,\(alicesId)\n,\(alicesId)\n")
            #expect(done.rows.imported == 1 && done.rows.refused == 1, "\(done)")
            // A second file, never read (no worker runs here): an import still running.
            let running = try await post(fixture, "customerId,transactionId\nbob,\(alicesId)\n").decode(ImportView.self)
            #expect(running.state == .running)
            try await Application(router: buildServerRouter(fixture.server)).test(.router) { client in
                let browser = ConsoleClient(client)
                try await browser.signIn()
                // The list: both imports, each linked, the running one's page reloading itself.
                let list = try await browser.get("/console/imports?app=\(app)")
                #expect(list.status == 200)
                for id in [done.id, running.id] {
                    #expect(list.body.contains("href=\"/console/imports/\(id)?app=\(app)\""), "\(list.body)")
                }
                #expect(list.body.contains("data-state=\"finished\"") && list.body.contains("data-state=\"running\""))
                #expect(list.body.contains("http-equiv=\"refresh\""))
                // The finished import: its counts as the admin API gives them, its rows by outcome, no refresh.
                let page = try await browser.get("/console/imports/\(done.id)?app=\(app)")
                #expect(page.figure("state") == "Finished" && page.figure("done") == "2" && page.figure("total") == "2")
                #expect(page.figure("imported") == "1" && page.figure("refused") == "1" && page.figure("failed") == "0")
                #expect(page.figure("recorded") == "\(done.transactions.recorded)" && done.transactions.recorded == 1)
                #expect(page.figure("refusedBy") == "invalidCustomerId 1")
                #expect(!page.body.contains("http-equiv=\"refresh\"") && !page.body.contains("/cancel\""))
                #expect(page.body.contains("data-row=\"1\"") && page.body.contains("data-row=\"2\""))
                #expect(page.body.contains("href=\"/console/customers/alice?app=\(app)\""))
                let refused = try await browser.get("/console/imports/\(done.id)?app=\(app)&outcome=refused")
                #expect(refused.body.contains("data-row=\"2\"") && !refused.body.contains("data-row=\"1\""))
                #expect(refused.body.contains("invalidCustomerId"))
                let unknown = try await browser.get("/console/imports/\(done.id)?app=\(app)&outcome=lost")
                #expect(unknown.status == 400 && unknown.body.contains("invalidOutcome"))
                let missing = try await browser.get("/console/imports/imp_0?app=\(app)")
                #expect(missing.status == 404 && missing.body.contains("importNotFound"))

                // The running import: its page reloads and offers to cancel it, with a note.
                let live = try await browser.get("/console/imports/\(running.id)?app=\(app)")
                #expect(live.figure("state") == "Running" && live.figure("pending") == "1")
                #expect(live.body.contains("http-equiv=\"refresh\""))
                #expect(live.body.contains("action=\"/console/imports/\(running.id)/cancel\""))
                let cancel = "/console/imports/\(running.id)/cancel"
                let noNote = try await browser.post(cancel, [("app", app), ("note", " ")])
                #expect(noNote.location?.contains("invalidNote") == true)
                let cancelled = try await browser.post(cancel, [("app", app), ("note", "wrong file")])
                #expect(cancelled.status == 303 && cancelled.location?.contains("notice=") == true)
                #expect(try await fixture.server.imports.view(id: running.id, bundleId: app).state == .cancelled)
                // Once more: it has ended, and the console says so.
                let again = try await browser.post(cancel, [("app", app), ("note", "again")])
                #expect(again.location?.contains("importEnded") == true)
                let after = try await browser.get("/console/imports/\(running.id)?app=\(app)")
                #expect(after.figure("state") == "Cancelled" && !after.body.contains("http-equiv=\"refresh\""))
            }
            // Each action is in the console's record with its note and outcome.
            let actions = try await fixture.server.database.sql.raw(
                "SELECT note, outcome FROM srv_console_actions WHERE action = 'cancelImport' ORDER BY at, note"
            ).all()
            let recorded = try actions.map { row in
                let note = try row.decode(column: "note", as: String?.self) ?? ""
                return "\(note.isEmpty ? "-" : note)=\(try row.decode(column: "outcome", as: String.self))"
            }
            #expect(Set(recorded) == ["-=invalidNote", "wrong file=done", "again=importEnded"], "\(recorded)")
        }
    }

    @Test func theAdminAPIRefusesWhatItCannotImport() async throws {
        try await ServerFixture.run(configure: Self.fast) { fixture in
            #expect(try await post(fixture, "").code == "invalidImportFile")
            #expect(try await post(fixture, "customer,transactionId\nalice,1\n").code == "invalidImportFile")
            #expect(try await post(fixture, "customerId,productId\nalice,gems\n").status == 400)
            #expect(try await post(fixture, "customerId,transactionId\n").code == "invalidImportFile", "no rows")
            #expect(try await get(fixture, "/imp_nothing").code == "importNotFound")
            let started = try await post(fixture, "customerId,transactionId\nalice,2000000000000001\n")
            #expect(started.status == 202)
            let id = try started.decode(ImportView.self).id
            // The same file while its import runs is that import.
            let again = try await post(fixture, "customerId,transactionId\nalice,2000000000000001\n")
            #expect(again.status == 200)
            #expect(try again.decode(ImportView.self).id == id)
            #expect(try await get(fixture, "/\(id)/rows?outcome=lost").code == "invalidOutcome")
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                let path = "/admin/v1/apps/\(ServerFixture.bundleId)/imports/\(id)/cancel"
                let cancelled = try await client.call(.post, path, token: "operator")
                #expect(cancelled.status == 200)
                #expect(try cancelled.decode(ImportView.self).state == .cancelled)
                #expect(try await client.call(.post, path, token: "operator").code == "importEnded")
                #expect(
                    try await client.call(
                        .post,
                        "/admin/v1/apps/com.example.none/imports",
                        bytes: [1],
                        token: "operator"
                    )
                    .code == "appNotFound"
                )
                #expect(try await client.call(.post, "/admin/v1/apps/\(ServerFixture.bundleId)/imports").status == 401)
            }
            // An app nobody can ask Apple for.
            _ = try await fixture.server.catalogue.createApp(ServerAppInput(bundleId: "com.example.keyless"))
            try await app.test(.router) { client in
                let refused = try await client.call(
                    .post,
                    "/admin/v1/apps/com.example.keyless/imports",
                    bytes: Array("customerId,transactionId\nalice,1\n".utf8),
                    token: "operator"
                )
                #expect(refused.status == 409 && refused.code == "noAPIKey")
            }
        }
    }

    // MARK: Webhooks

    @Test func importedEventsReachWebhooksOnlyWhenTheSettingSaysSo() async throws {
        for deliver in [false, true] {
            try await ServerFixture.run(
                configure: {
                    Self.fast(&$0)
                    $0.webhooks = WebhookSettings(allowHTTPToLoopback: true, deliverImports: deliver)
                }
            ) { fixture in
                let endpoint = try await fixture.server.webhookEndpoints.create(
                    bundleId: ServerFixture.bundleId,
                    Components.Schemas.WebhookEndpointInput(url: "http://127.0.0.1:1/hooks")
                )
                let alice = try await buyer(fixture, buying: ["pro"])
                let view = try await imported(
                    fixture,
                    "customerId,transactionId\nalice,\(try #require(alice.purchases[0].transactionId))\n"
                )
                #expect(view.rows.imported == 1)
                _ = try await fixture.server.webhookDeliveries.dispatch(
                    endpointId: endpoint.endpoint.id,
                    worker: "test"
                )
                let deliveries = try await count(fixture, "SELECT COUNT(*) AS n FROM srv_webhook_deliveries")
                #expect((deliveries > 0) == deliver, "deliver-imports \(deliver): \(deliveries) deliveries")
                guard !deliver else { return }
                // A replay of every event since a time leaves the imports out as the dispatch does; one event named by
                // its id is sent whatever it is.
                let replayed = try await fixture.server.webhookDeliveries.replay(
                    bundleId: ServerFixture.bundleId,
                    endpointId: endpoint.endpoint.id,
                    Components.Schemas.WebhookReplayRequest(since: 0)
                )
                #expect(replayed == 0)
                let imported = try #require(
                    try await fixture.server.database.sql.raw(
                        "SELECT id FROM srv_events WHERE source = 'import' ORDER BY sequence LIMIT 1"
                    ).first()?.decode(column: "id", as: String.self)
                )
                let named = try await fixture.server.webhookDeliveries.replay(
                    bundleId: ServerFixture.bundleId,
                    endpointId: endpoint.endpoint.id,
                    Components.Schemas.WebhookReplayRequest(eventId: imported)
                )
                #expect(named == 1)
            }
        }
    }
}
