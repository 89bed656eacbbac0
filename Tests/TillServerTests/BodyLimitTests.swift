import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
import TillHTTPKit
import TillTestSupport

@testable import TillServer

/// Each route reads at most its own body limit (docs/fuzzing.md, "Resource bounds"): 64 KiB for JSON settings and
/// small requests, 512 KiB for a notification, 2 MiB for a body carrying a receipt. One byte more is 413
/// `bodyTooLarge`, before anything is decoded or stored.
struct BodyLimitTests {
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
                for depth in [100, 513, 20_000] {
                    let deep = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
                    let body = #"{"customerId":"alice","signedTransaction":"# + deep + "}"
                    let answer = try await client.call(.post, "/v1/receipts", json: body, token: fixture.app.appKey)
                    #expect(answer.status == 400 && answer.code == "invalidBody", "\(depth): \(answer.status)")
                }
            }
        }
    }
}
