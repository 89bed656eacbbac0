import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// The server's HTTP API, as an app and an operator use it.
@Suite(.sharingTheMachine)
struct ServerHTTPTests {
    typealias Reply = HTTPReply

    func call(
        _ client: some TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ path: String,
        _ body: String? = nil,
        token: String?,
        headers: HTTPFields = [:]
    ) async throws -> Reply {
        try await client.call(method, path, json: body, token: token, headers: headers)
    }

    func body(_ object: [String: Any]) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    @Test(arguments: TestDatabase.all) func appsAuthenticateAndTheMasterListIsCached(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                #expect(try await call(client, .get, "/v1/products", token: nil).status == 401)
                #expect(try await call(client, .get, "/v1/products", token: "tk_wrong").code == "unauthorized")
                let list = try await call(client, .get, "/v1/products", token: fixture.app.appKey)
                #expect(list.status == 200 && (list.object["products"] as? [Any])?.count == 4)
                let etag = try #require(list.headers[.eTag])
                #expect(
                    try await call(
                        client,
                        .get,
                        "/v1/products",
                        token: fixture.app.appKey,
                        headers: [.ifNoneMatch: etag]
                    ).status == 304
                )
                // RFC 9110: a weak validator or a list of tags matches too.
                #expect(
                    try await call(
                        client,
                        .get,
                        "/v1/products",
                        token: fixture.app.appKey,
                        headers: [.ifNoneMatch: #""old", W/\#(etag)"#]
                    ).status == 304
                )
                // A new product changes the list and its ETag.
                _ = try await call(
                    client,
                    .put,
                    "/admin/v1/apps/\(ServerFixture.bundleId)/products/issue.2",
                    #"{"type":"nonRenewing","entitlements":["issue-2"],"durationSeconds":3600}"#,
                    token: "operator"
                )
                #expect(
                    try await call(
                        client,
                        .get,
                        "/v1/products",
                        token: fixture.app.appKey,
                        headers: [.ifNoneMatch: etag]
                    ).status == 200
                )
                #expect(try await call(client, .get, "/admin/v1/apps", token: fixture.app.appKey).status == 401)
                let apps = try await call(client, .get, "/admin/v1/apps", token: "operator")
                #expect((apps.object["items"] as? [[String: Any]])?.first?["apiPrivateKey"] == nil)
                #expect((apps.object["items"] as? [[String: Any]])?.first?["hasAPIKey"] as? Bool == true)
                // A key is all three of its fields or none: a PATCH that would leave a key id alone is refused.
                let created = try await call(
                    client,
                    .post,
                    "/admin/v1/apps",
                    #"{"bundleId":"com.example.keyless","appAppleId":42,"name":"Keyless","sharedSecrets":["s"]}"#,
                    token: "operator"
                )
                #expect(created.status == 201, "\(created.status) \(created.code ?? "")")
                for (patch, code) in [
                    (#"{"apiKeyId":"ABC"}"#, "invalidAPIKey"), (#"{"apiIssuerId":"issuer"}"#, "invalidAPIKey"),
                    (#"{"inAppPurchaseKeyId":"XYZ"}"#, "invalidInAppPurchaseKey"),
                ] {
                    let refused = try await call(
                        client,
                        .patch,
                        "/admin/v1/apps/com.example.keyless",
                        patch,
                        token: "operator"
                    )
                    #expect(
                        refused.status == 400 && refused.code == code,
                        "\(patch): \(refused.status) \(refused.code ?? "")"
                    )
                }
                let keyless = try await call(client, .get, "/admin/v1/apps/com.example.keyless", token: "operator")
                #expect(
                    keyless.object["hasAPIKey"] as? Bool == false && keyless.object["apiKeyId"] == nil,
                    "\(keyless.object)"
                )
            }
        }
    }

    @Test(arguments: TestDatabase.all) func submissionsAreAcceptedAtOnceAndWaitedForOnRequest(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                let purchase = try await fixture.buy("pro")
                fixture.simulator.faults.add(try FaultRule(parsing: "sandbox:serverAPI:latency=0.5,times=1"))
                let quick = try await call(
                    client,
                    .post,
                    "/v1/receipts",
                    body(["customerId": "alice", "signedTransaction": purchase.signedTransaction!]),
                    token: fixture.app.appKey
                )
                #expect(
                    quick.status == 202
                        && (quick.object["submission"] as? [String: Any])?["state"] as? String == "pending"
                )
                let id = try #require((quick.object["submission"] as? [String: Any])?["id"] as? String)
                let polled = try await call(client, .get, "/v1/submissions/\(id)?", token: fixture.app.appKey)
                #expect(polled.status == 200)

                let second = try await fixture.buy("gems.100")
                let waited = try await call(
                    client,
                    .post,
                    "/v1/receipts?wait=60",
                    body(["customerId": "alice", "signedTransaction": second.signedTransaction!]),
                    token: fixture.app.appKey
                )
                #expect(
                    waited.status == 200
                        && (waited.object["submission"] as? [String: Any])?["state"] as? String == "confirmed"
                )
                #expect(((waited.object["customer"] as? [String: Any])?["balances"] as? [String: Int]) == ["gems": 100])
                // Path parameters are percent-decoded: the customer "alice smith" is /v1/customers/alice%20smith.
                let third = try await fixture.buy("gems.100")
                _ = try await call(
                    client,
                    .post,
                    "/v1/receipts",
                    body(["customerId": "alice smith", "signedTransaction": third.signedTransaction!]),
                    token: fixture.app.appKey
                )
                let spaced = try await call(client, .get, "/v1/customers/alice%20smith", token: fixture.app.appKey)
                #expect(spaced.object["customerId"] as? String == "alice smith")
                #expect((spaced.object["balances"] as? [String: Int]) == ["gems": 100])
                let health = try await call(client, .get, "/health", token: nil)
                #expect(health.headers[.contentType]?.hasPrefix("application/json") == true)
                #expect(health.object["status"] as? String == "ok")

                #expect(
                    try await call(client, .post, "/v1/receipts", "{not json", token: fixture.app.appKey).code
                        == "invalidBody"
                )
                #expect(
                    try await call(client, .post, "/v1/receipts", #"{"customerId":"alice"}"#, token: fixture.app.appKey)
                        .code == "oneFormatExpected"
                )
                // An empty field is said apart from a missing one (a shell's failed `$(base64 receipt.bin)` sends it).
                let empty = try await call(
                    client,
                    .post,
                    "/v1/receipts",
                    body(["customerId": "alice", "receipt": ""]),
                    token: fixture.app.appKey
                )
                #expect(empty.status == 400 && empty.code == "oneFormatExpected")
                #expect(empty.message?.hasPrefix("receipt is empty") == true, "\(empty.object)")
                let forged = try await call(
                    client,
                    .post,
                    "/v1/receipts",
                    body(["customerId": "alice", "receipt": "MIIBAAAA"]),
                    token: fixture.app.appKey
                )
                #expect(forged.status == 422 && forged.code == "invalidFormat")
                #expect(try await call(client, .get, "/v1/submissions/nope", token: fixture.app.appKey).status == 404)
                #expect(try await call(client, .get, "/v1/nowhere", token: fixture.app.appKey).code == "notFound")
            }
        }
    }

    @Test(arguments: TestDatabase.all) func aCachedCustomerViewEndsWithItsEntitlement(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database, followSimulatorClock: true) { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                let issue = try await fixture.buy("issue.1")  // a non-renewing day
                _ = try await call(
                    client,
                    .post,
                    "/v1/receipts",
                    body(["customerId": "ivy", "signedTransaction": issue.signedTransaction!]),
                    token: fixture.app.appKey
                )
                func entitlements() async throws -> [String] {
                    let view = try await call(client, .get, "/v1/customers/ivy", token: fixture.app.appKey)
                    return ((view.object["entitlements"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String }
                }
                #expect(try await entitlements() == ["issue-1"])
                #expect(try await entitlements() == ["issue-1"])  // from the cache
                // A day later (the server follows the simulator's clock), well within the cache's second.
                _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 86_401)
                #expect(try await entitlements() == [])
            }
        }
    }

    @Test(arguments: TestDatabase.all) func creditsAreSpentOnceAndNeverBelowZero(_ database: TestDatabase) async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                let gems = try await fixture.buy("gems.100", quantity: 2)
                _ = try await call(
                    client,
                    .post,
                    "/v1/receipts",
                    body(["customerId": "bob", "signedTransaction": gems.signedTransaction!]),
                    token: fixture.app.appKey
                )
                let debit = #"{"credit":"gems","amount":150,"requestId":"spend-1"}"#
                #expect(
                    (try await call(client, .post, "/v1/customers/bob/debits", debit, token: fixture.app.appKey).object[
                        "balances"
                    ] as? [String: Int]) == ["gems": 50]
                )
                #expect(
                    (try await call(client, .post, "/v1/customers/bob/debits", debit, token: fixture.app.appKey).object[
                        "balances"
                    ] as? [String: Int]) == ["gems": 50]
                )
                let tooMuch = try await call(
                    client,
                    .post,
                    "/v1/customers/bob/debits",
                    #"{"credit":"gems","amount":51,"requestId":"spend-2"}"#,
                    token: fixture.app.appKey
                )
                #expect(tooMuch.status == 409 && tooMuch.code == "insufficientBalance")
                #expect(
                    try await call(
                        client,
                        .post,
                        "/v1/customers/bob/debits",
                        #"{"credit":"gems","amount":0,"requestId":"spend-3"}"#,
                        token: fixture.app.appKey
                    ).status == 400
                )
            }
        }
    }

    /// A HEAD of a GET route is the GET's answer without its body, Content-Length included (RFC 9110; health checks
    /// and proxies send them): it was `405 methodNotAllowed`. A refusal to a HEAD has no body either, and a 405 lists
    /// HEAD beside GET.
    @Test func aHeadIsAnsweredAsItsGetWithoutTheBody() async throws {
        try await ServerFixture.run { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                let gets: [(String, String?)] = [
                    ("/health", nil), ("/v1/products", fixture.app.appKey), ("/openapi.yaml", nil),
                ]
                for (path, token) in gets {
                    let get = try await call(client, .get, path, token: token)
                    let head = try await call(client, .head, path, token: token)
                    #expect(get.status == 200 && head.status == 200, "\(path): \(get.status) \(head.status)")
                    #expect(head.body.isEmpty && !get.body.isEmpty, "\(path)")
                    #expect(
                        head.headers[.contentLength] == String(get.body.count)
                            && head.headers[.contentType] == get.headers[.contentType],
                        "\(path): \(head.headers)"
                    )
                }
                for (path, status) in [("/v1/products", 401), ("/nowhere", 404)] {
                    let head = try await call(client, .head, path, token: nil)
                    #expect(head.status == status && head.body.isEmpty, "\(path): \(head.status) \(head.body.count)")
                }
                let post = try await call(client, .post, "/health", token: nil)
                #expect(post.status == 405 && post.headers[.allow] == "GET, HEAD", "\(post.headers)")
                let delete = try await call(client, .delete, "/v1/receipts", token: nil)
                #expect(delete.status == 405 && delete.headers[.allow] == "POST", "\(delete.headers)")
            }
        }
    }

    /// `?wait=` that is not a number of seconds is `400 invalidWait` before the purchase is recorded: it was taken for
    /// no wait, and the app that meant to wait got a 202 it did not expect.
    @Test func aWaitThatIsNotANumberIsRefusedBeforeAnythingIsRecorded() async throws {
        try await ServerFixture.run { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                let purchase = try await fixture.buy("gems.100")
                let submission = body(["customerId": "dora", "signedTransaction": purchase.signedTransaction!])
                for wait in ["abc", "-1", "nan", "inf", ""] {
                    let refused = try await call(
                        client,
                        .post,
                        "/v1/receipts?wait=\(wait)",
                        submission,
                        token: fixture.app.appKey
                    )
                    #expect(refused.status == 400 && refused.code == "invalidWait", "\(wait): \(refused.status)")
                    let restore = try await call(
                        client,
                        .post,
                        "/v1/customers/dora/restore?wait=\(wait)",
                        body(["signedTransaction": purchase.signedTransaction!]),
                        token: fixture.app.appKey
                    )
                    #expect(restore.status == 400 && restore.code == "invalidWait", "\(wait): \(restore.status)")
                }
                let customer = try await call(client, .get, "/v1/customers/dora", token: fixture.app.appKey)
                #expect((customer.object["balances"] as? [String: Int] ?? [:]).isEmpty, "\(customer.object)")
                // Zero does not wait; more than 60 waits 60.
                let now = try await call(client, .post, "/v1/receipts?wait=0", submission, token: fixture.app.appKey)
                #expect(now.status == 200 || now.status == 202, "\(now.status) \(now.code ?? "")")
            }
        }
    }

    /// A filter naming an app that does not exist is `404 appNotFound`, not a page that looks like an app with no
    /// events or no sales yet (a typo in a bundle id read as "nothing happened").
    @Test func aFilterNamingNoAppIsNotFound() async throws {
        try await ServerFixture.run { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                for path in [
                    "/admin/v1/events?bundleId=com.example.nope",
                    "/admin/v1/reports/revenue?from=2026-11-01&to=2026-12-01&bundleId=com.example.nope",
                ] {
                    let answer = try await call(client, .get, path, token: "operator")
                    #expect(answer.status == 404 && answer.code == "appNotFound", "\(path): \(answer.status)")
                }
                for path in [
                    "/admin/v1/events?bundleId=\(ServerFixture.bundleId)",
                    "/admin/v1/reports/revenue?from=2026-11-01&to=2026-12-01&bundleId=\(ServerFixture.bundleId)",
                ] {
                    #expect(try await call(client, .get, path, token: "operator").status == 200, "\(path)")
                }
            }
        }
    }

    /// A body of the wrong shape is told in JSON's words and the field's path, not Swift's ("Expected to decode
    /// Dictionary<String, Any> but found an array instead").
    @Test func aBodyOfTheWrongShapeIsToldInJSONsWords() async throws {
        try await ServerFixture.run { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                for (body, words) in [
                    ("[]", "expected an object"),
                    (#"{"bundleId":5}"#, "bundleId: expected a string"),
                    (
                        #"{"bundleId":"com.example.shape","sharedSecrets":[null]}"#,
                        "sharedSecrets[0]: expected a string, not null"
                    ),
                    (#"{"bundleId":"com.example.shape","sharedSecrets":"s"}"#, "sharedSecrets: expected an array"),
                    (
                        #"{"bundleId":"com.example.shape","acceptSandbox":"yes"}"#,
                        "acceptSandbox: expected true or false"
                    ),
                    (#"{"bundleId":"com.example.shape","appAppleId":"one"}"#, "appAppleId: expected a whole number"),
                    (
                        #"{"bundleId":"com.example.shape","appAppleId":1.5}"#,
                        "a number does not fit its field (a fraction where a whole number is needed, or one too large)"
                    ),
                    (
                        #"{"bundleId":"com.example.shape","appAppleId":1e400}"#,
                        "a number does not fit its field (a fraction where a whole number is needed, or one too large)"
                    ),
                ] {
                    let refused = try await call(client, .post, "/admin/v1/apps", body, token: "operator")
                    #expect(
                        refused.status == 400 && refused.code == "invalidBody",
                        "\(body): \(refused.status) \(refused.message ?? "")"
                    )
                    let message = refused.message ?? ""
                    #expect(message.hasSuffix(words) && !message.contains("Expected to decode"), "\(body): \(message)")
                }
            }
        }
    }
}
