import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SQLKit
import Testing
import TillAppStore
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

extension ServerHTTPTests {
    @Test(arguments: TestDatabase.all) func aGuestsPurchasesMoveToTheAccountOnceAndRestoreSkipsConsumables(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                let gems = try await fixture.buy("gems.100")
                _ = try await fixture.buy("pro")
                let receipt = try await fixture.receipt()
                _ = try await call(
                    client,
                    .post,
                    "/v1/receipts",
                    body(["customerId": "guest-device-1", "receipt": receipt]),
                    token: fixture.app.appKey
                )
                let linked = try await call(
                    client,
                    .post,
                    "/v1/customers/carol/aliases",
                    #"{"customerId":"guest-device-1"}"#,
                    token: fixture.app.appKey
                )
                #expect(linked.object["balances"] as? [String: Int] == ["gems": 100])
                // The same purchases sent again under either id are not credited twice.
                _ = try await call(
                    client,
                    .post,
                    "/v1/receipts",
                    body(["customerId": "carol", "receipt": receipt]),
                    token: fixture.app.appKey
                )
                _ = try await call(
                    client,
                    .post,
                    "/v1/receipts",
                    body(["customerId": "guest-device-1", "signedTransaction": gems.signedTransaction!]),
                    token: fixture.app.appKey
                )
                let carol = try await call(client, .get, "/v1/customers/carol", token: fixture.app.appKey)
                #expect(carol.object["balances"] as? [String: Int] == ["gems": 100])
                #expect((carol.object["entitlements"] as? [[String: Any]])?.map { $0["id"] as? String } == ["pro"])

                let restore = try await call(
                    client,
                    .post,
                    "/v1/customers/carol/restore",
                    body(["receipt": receipt]),
                    token: fixture.app.appKey
                )
                #expect(restore.status == 200)
                #expect((restore.object["restored"] as? [[String: Any]])?.map { $0["productId"] as? String } == ["pro"])
            }
        }
    }

    @Test(arguments: TestDatabase.all) func aRestoreCanWaitForApplesAnswerAndThenRestoresOnlyWhatAppleConfirms(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                _ = try await fixture.buy("pro")
                let receipt = try await fixture.receipt()
                try await fixture.simulator.appStoreConnect.deleteAccount(id: fixture.account.id)  // Apple will answer 21010
                let waited = try await call(
                    client,
                    .post,
                    "/v1/customers/erin/restore?wait=60",
                    body(["receipt": receipt]),
                    token: fixture.app.appKey
                )
                #expect(waited.status == 200)
                #expect((waited.object["submission"] as? [String: Any])?["state"] as? String == "rejected")
                #expect((waited.object["restored"] as? [Any])?.isEmpty == true)
                #expect(((waited.object["customer"] as? [String: Any])?["entitlements"] as? [Any])?.isEmpty == true)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func aKnownPathWithAnotherMethodIs405WithAllow(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                let key = fixture.app.appKey
                let sha = String(repeating: "0", count: 64)
                for (method, path, token, allow) in [
                    // The router answers HEAD wherever it answers GET.
                    (HTTPRequest.Method.delete, "/v1/customers/alice", key, "GET, HEAD"),
                    (.post, "/v1/products", key, "GET, HEAD"),
                    (.get, "/v1/receipts", key, "POST"),
                    (.put, "/v1/content/\(ServerFixture.bundleId)/\(sha)", nil, "GET, HEAD"),
                    (.delete, "/admin/v1/apps/\(ServerFixture.bundleId)", "operator", "GET, HEAD, PATCH"),
                    (.get, "/v1/apple/notifications", nil, "POST"),
                ] {
                    let reply = try await call(client, method, path, token: token)
                    #expect(reply.status == 405, "\(method) \(path)")
                    #expect(reply.code == "methodNotAllowed", "\(method) \(path)")
                    #expect(reply.headers[.allow] == allow, "\(method) \(path)")
                }
                // An unknown path is still 404, whatever the method.
                #expect(try await call(client, .delete, "/v1/nowhere", token: key).code == "notFound")
                #expect(try await call(client, .get, "/v1/customers/alice/extra", token: key).code == "notFound")
            }
        }
    }

    @Test(arguments: TestDatabase.all) func aProductIsCreatedWith201AndReplacedWith200AndAnAppKeepsItsBundleId(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                let path = "/admin/v1/apps/\(ServerFixture.bundleId)/products/issue.9"
                let product = #"{"type":"nonConsumable","entitlements":["issue-9"]}"#
                let created = try await call(client, .put, path, product, token: "operator")
                #expect(created.status == 201)
                // The answer is the contract's Product, to the field.
                let shown = try created.decode(Components.Schemas.Product.self)
                #expect(
                    shown.productId == "issue.9" && shown._type == .nonConsumable && shown.entitlements == ["issue-9"]
                )
                #expect(try await call(client, .put, path, product, token: "operator").status == 200)
                // The body is the contract's ProductInput: a product without a type, or with one the contract does
                // not name, is not one.
                for refused in [#"{"entitlements":["issue-9"]}"#, #"{"type":"lifetime"}"#] {
                    let answer = try await call(client, .put, path, refused, token: "operator")
                    #expect(answer.status == 400 && answer.code == "invalidBody")
                }

                let appPath = "/admin/v1/apps/\(ServerFixture.bundleId)"
                let moved = try await call(
                    client,
                    .patch,
                    appPath,
                    #"{"bundleId":"com.example.other","name":"Other"}"#,
                    token: "operator"
                )
                #expect(moved.status == 400 && moved.code == "bundleIdImmutable")
                let unchanged = try await call(client, .get, appPath, token: "operator")
                #expect(unchanged.object["name"] as? String != "Other")  // nothing of the refused change was kept
                let renamed = try await call(
                    client,
                    .patch,
                    appPath,
                    body(["bundleId": ServerFixture.bundleId, "name": "Renamed"]),
                    token: "operator"
                )
                #expect(renamed.status == 200 && renamed.object["name"] as? String == "Renamed")
            }
        }
    }

    @Test(arguments: TestDatabase.all) func anAliasNeedsTwoDifferentIdsOfAtMost200Characters(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                let long = String(repeating: "g", count: 201)
                for (account, guest, code) in [
                    ("carol", "carol", "invalidAlias"), ("carol", "", "invalidCustomerId"),
                    ("carol", long, "invalidCustomerId"),
                    (long, "guest-1", "invalidCustomerId"), ("%20", "guest-1", "invalidCustomerId"),
                ] {
                    let reply = try await call(
                        client,
                        .post,
                        "/v1/customers/\(account)/aliases",
                        body(["customerId": guest]),
                        token: fixture.app.appKey
                    )
                    #expect(reply.status == 400 && reply.code == code, "\(account.count) ← \(guest.count)")
                }
                let linked = try await call(
                    client,
                    .post,
                    "/v1/customers/carol/aliases",
                    body(["customerId": String(repeating: "g", count: 200)]),
                    token: fixture.app.appKey
                )
                #expect(linked.status == 200)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func theRevenueReportCountsProductionOnlyAndDeadLettersCanBeRetried(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database, confirmation: .init(maximumAttempts: 1)) { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            let store = PurchaseStore(database: fixture.server.database)
            for (env, id, amount, day) in [
                ("Production", "1", Int64(990), "2026-11-01"), ("Production", "2", 4990, "2026-11-01"),
                ("Production", "3", 990, "2026-11-02"), ("Sandbox", "4", 990, "2026-11-01"),
            ] {
                try await store.sql.raw(
                    """
                    INSERT INTO srv_finance (environment, transaction_id, bundle_id, product_id, amount, currency,
                        occurred_at, kind)
                    VALUES (\(bind: env), \(bind: id), \(bind: ServerFixture.bundleId),
                        \(bind: amount == 990 ? "gems.100" : "pro"), \(bind: amount), 'USD',
                        \(bind: ReportDates.parse(day)! + 3_600_000), 'purchase')
                    """
                ).run()
            }
            // Written behind the ledger's back (the books of four days): the figures the report reads are made anew
            // from the books, as `till bench ledger` does after its bulk load.
            try await fixture.server.figures.rebuild()
            try await app.test(.router) { client in
                let byDay = try await call(
                    client,
                    .get,
                    "/admin/v1/reports/revenue?from=2026-11-01&to=2026-11-03&groupBy=day",
                    token: "operator"
                )
                #expect(byDay.object["totals"] as? [String: Int] == ["USD": 6970])
                #expect((byDay.object["rows"] as? [[String: Any]])?.map { $0["amount"] as? Int } == [5980, 990])
                let byProduct = try await call(
                    client,
                    .get,
                    "/admin/v1/reports/revenue?from=2026-11-01&to=2026-11-03&groupBy=product",
                    token: "operator"
                )
                #expect(
                    (byProduct.object["rows"] as? [[String: Any]])?.map { $0["key"] as? String } == ["gems.100", "pro"]
                )
                #expect(
                    try await call(
                        client,
                        .get,
                        "/admin/v1/reports/revenue?from=2026-11-03&to=2026-11-01",
                        token: "operator"
                    ).code == "invalidRange"
                )

                _ = try await fixture.buy("pro")
                fixture.simulator.faults.add(try FaultRule(parsing: "*:verifyReceipt:outage=503,times=1"))
                let submitted = try await call(
                    client,
                    .post,
                    "/v1/receipts?wait=60",
                    body(["customerId": "dan", "receipt": try await fixture.receipt()]),
                    token: fixture.app.appKey
                )
                #expect((submitted.object["submission"] as? [String: Any])?["state"] as? String == "deadLettered")
                let dead = try await call(client, .get, "/admin/v1/submissions?state=deadLettered", token: "operator")
                let id = try #require((dead.object["items"] as? [[String: Any]])?.first?["id"] as? String)
                #expect(
                    try await call(client, .post, "/admin/v1/submissions/\(id)/retry", token: "operator").status == 200
                )
                let settled = try await fixture.server.intake.waitForSettlement(
                    id: id,
                    bundleId: ServerFixture.bundleId,
                    timeout: .seconds(60)
                )
                #expect(settled.state == .confirmed)
            }
        }
    }
}
