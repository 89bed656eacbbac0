import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
import TillHTTPKit
import TillLedger
import TillTestSupport

@testable import TillServer

/// Bodies no client sends (docs/fuzzing.md): over their route's limit (64 KiB for JSON settings and small requests,
/// 512 KiB for a notification, 2 MiB for a body carrying a receipt; one byte more is 413 `bodyTooLarge`, before
/// anything is decoded or stored), nested too deeply, ambiguous, or unstorable.
@Suite(.sharingTheMachine)
struct HostileBodyTests {
    /// A JSON object of exactly `size` bytes: `{"customerId":"alice","pad":"xxx…"}`.
    static func body(size: Int, prefix: String = #"{"customerId":"alice","pad":""#) -> String {
        prefix + String(repeating: "x", count: size - prefix.utf8.count - 2) + #""}"#
    }

    @Test func eachRouteReadsAtMostItsLimit() async throws {
        try await ServerFixture.run { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                let key = fixture.app.appKey
                let routes: [(HTTPRequest.Method, String, String?, Int)] = [
                    (.post, "/v1/receipts", key, BodyLimit.receipt),
                    (.post, "/v1/customers/alice/restore", key, BodyLimit.receipt),
                    (.post, "/v1/apple/notifications", nil, BodyLimit.notification),
                    (.post, "/v1/customers/alice/debits", key, BodyLimit.json),
                    (.post, "/v1/customers/alice/aliases", key, BodyLimit.json),
                    (.put, "/v1/customers/alice/consumption-consent", key, BodyLimit.json),
                    (.put, "/v1/customers/alice/app-transaction", key, BodyLimit.json),
                    (.post, "/v1/customers/alice/offers/promotional", key, BodyLimit.json),
                    (.post, "/admin/v1/apps", "operator", BodyLimit.json),
                    (.put, "/admin/v1/apps/com.example.till/products/new", "operator", BodyLimit.json),
                ]
                for (method, path, token, limit) in routes {
                    let over = try await client.call(method, path, json: Self.body(size: limit + 1), token: token)
                    #expect(
                        over.status == 413 && over.code == "bodyTooLarge",
                        "\(path): \(over.status) \(over.code ?? "")"
                    )
                    #expect(over.message?.contains("\(limit) bytes") == true)
                    // At the limit the body is read, and refused for what it is, not for its size.
                    let at = try await client.call(method, path, json: Self.body(size: limit), token: token)
                    #expect(at.status != 413 && at.status < 500, "\(path): \(at.status) \(at.code ?? "")")
                }
            }
        }
    }

    @Test func deeplyNestedJSONIsAClearRefusal() async throws {
        try await ServerFixture.run { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                for depth in [64, 513, 20_000] {
                    let deep = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
                    let body = #"{"customerId":"alice","signedTransaction":"# + deep + "}"
                    let answer = try await client.call(.post, "/v1/receipts", json: body, token: fixture.app.appKey)
                    #expect(answer.status == 400 && answer.code == "invalidBody", "\(depth): \(answer.status)")
                }
            }
        }
    }

    /// Found by the `app-api` and `notification` targets: a key given twice (`customerId` and `cust\u006fmerId`)
    /// made the body's meaning depend on member order (Foundation's decoder takes the first), and a customer id
    /// could hold U+0000 or another control character, which PostgreSQL cannot store (a 500 there). Both are 400s
    /// now, on SQLite and PostgreSQL alike.
    @Test(arguments: TestDatabase.all) func ambiguousAndUnstorableBodiesAreRefused(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                let key = fixture.app.appKey
                let twice = #"{"customerId":"alice","cust\u006fmerId":"bob"}"#
                let duplicate = try await client.call(.post, "/v1/customers/carol/aliases", json: twice, token: key)
                #expect(duplicate.status == 400 && duplicate.code == "invalidBody")
                #expect(duplicate.message?.contains("duplicate key \"customerId\"") == true)
                let nul = try await client.call(
                    .post,
                    "/v1/customers/carol/aliases",
                    json: #"{"customerId":"a\u0000b"}"#,
                    token: key
                )
                #expect(nul.status == 400 && nul.code == "invalidBody", "\(nul.status) \(nul.code ?? "")")
                let debit = #"{"credit":"gems\u0000","amount":1,"requestId":"r1"}"#
                let nulCredit = try await client.call(.post, "/v1/customers/carol/debits", json: debit, token: key)
                #expect(nulCredit.status == 400 && nulCredit.code == "invalidBody")
                for path in ["/v1/customers/a%00b", "/v1/customers/a%0Ab", "/v1/customers/%7F"] {
                    let answer = try await client.call(.get, path, token: key)
                    #expect(answer.status == 400 && answer.code == "invalidCustomerId", "\(path): \(answer.status)")
                }
                // What is neither still works.
                let alias = try await client.call(
                    .post,
                    "/v1/customers/carol/aliases",
                    json: #"{"customerId":"guest-1"}"#,
                    token: key
                )
                #expect(alias.status < 300, "\(alias.status) \(alias.code ?? "")")
            }
        }
    }
}
