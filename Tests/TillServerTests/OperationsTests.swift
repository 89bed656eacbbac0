import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import TillAppStore
import TillCore
import TillFormats
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// What an operator runs the server with: request ids, metrics, the OpenAPI document.
extension ServerHTTPTests {
    func text(_ client: some TestClientProtocol, _ path: String) async throws -> (Int, String, HTTPFields) {
        try await client.execute(uri: path, method: .get) { response in
            (Int(response.status.code), String(buffer: response.body), response.headers)
        }
    }

    @Test(arguments: TestDatabase.all) func everyAnswerCarriesARequestId(_ database: TestDatabase) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                let given = try await call(
                    client,
                    .get,
                    "/v1/products",
                    token: fixture.app.appKey,
                    headers: [.requestId: "trace-42.a_b"]
                )
                #expect(given.headers[.requestId] == "trace-42.a_b")
                let made = try await call(client, .get, "/v1/products", token: fixture.app.appKey)
                let id = try #require(made.headers[.requestId])
                #expect(id.count == 16 && id.allSatisfy(\.isHexDigit))
                // Errors carry one too, and an unsafe id is replaced rather than echoed.
                let refused = try await call(
                    client,
                    .get,
                    "/v1/products",
                    token: nil,
                    headers: [.requestId: "bad id\u{7f}"]
                )
                #expect(refused.status == 401 && refused.headers[.requestId]?.count == 16)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func metricsCountSubmissionsConfirmationsAndTheQueue(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                let purchase = try await fixture.buy("pro")
                let waited = try await call(
                    client,
                    .post,
                    "/v1/receipts?wait=60",
                    body(["customerId": "alice", "signedTransaction": purchase.signedTransaction!]),
                    token: fixture.app.appKey
                )
                #expect(waited.status == 200)
                _ = try await call(
                    client,
                    .post,
                    "/v1/receipts",
                    body(["customerId": "alice", "receipt": "MIIBAAAA"]),
                    token: fixture.app.appKey
                )
                let (status, exposition, headers) = try await text(client, "/metrics")
                #expect(status == 200 && headers[.contentType]?.hasPrefix("text/plain") == true)
                let lines = Set(exposition.split(separator: "\n").map(String.init))
                #expect(lines.contains(#"till_submissions_total{kind="signedTransaction",outcome="accepted"} 1"#))
                #expect(lines.contains(#"till_submissions_total{kind="appReceipt",outcome="refused"} 1"#))
                #expect(lines.contains(#"till_confirmations_total{result="confirmed",status="HTTP 200"} 1"#))
                #expect(lines.contains(#"till_queue_depth{state="pending"} 0.0"#))
                #expect(lines.contains(#"till_queue_depth{state="deadLettered"} 0.0"#))
                #expect(lines.contains { $0.hasPrefix("till_submission_acknowledge_seconds_bucket") })
                #expect(
                    lines.contains {
                        $0.hasPrefix(#"till_http_requests_total{method="POST",route="/v1/receipts",status="422"}"#)
                    }
                )
                // SQLite's one writer held its lock for the purchase's transaction; PostgreSQL has no such writer.
                let writer = lines.first { $0.hasPrefix("till_sqlite_writer_busy_seconds ") }
                if fixture.server.database.engine == .sqlite {
                    let seconds = try #require(writer.flatMap { Double($0.split(separator: " ")[1]) }, "\(lines)")
                    #expect(seconds > 0)
                } else {
                    #expect(writer == nil)
                }
                // The pages its commits appended to SQLite's log: the purchase's tables and indexes, a page each.
                let pages = lines.first { $0.hasPrefix("till_sqlite_wal_pages ") }
                if fixture.server.database.engine == .sqlite {
                    let count = try #require(pages.flatMap { Double($0.split(separator: " ")[1]) }, "\(lines)")
                    #expect(count >= 20)
                } else {
                    #expect(pages == nil)
                }
            }
        }
    }

    /// The counters docs/operations.md alerts on are there at 0 before anything happened: one that appeared only at
    /// its first increment had no rate, and an alert on its increase missed that first one.
    @Test func theAlertedCountersStartAtZero() throws {
        let lines = Set(String(decoding: ServerMetrics().emit(), as: UTF8.self).split(separator: "\n").map(String.init))
        for series in [
            #"till_catch_up_runs_total{outcome="incomplete"} 0"#,
            #"till_catch_up_notifications_total{environment="Production",result="applied"} 0"#,
            #"till_catch_up_transactions_total{environment="Sandbox",result="recorded"} 0"#,
            #"till_webhook_attempts_total{outcome="failed"} 0"#,
            #"till_notifications_total{type="unknown",outcome="refused"} 0"#,
            #"till_job_attempts_total{kind="delivery",outcome="deadLettered"} 0"#,
        ] {
            #expect(lines.contains(series), "\(series) is not in \(lines.sorted())")
        }
    }

    /// Every series the server exports is in docs/api.md's table of `/metrics`, so that an operator finds what a new
    /// one means where they find the others (four were missing from it before this test).
    @Test func everyMetricIsInTheAPIDocs() throws {
        let source = try String(
            contentsOf: LayoutTests.root.appendingPathComponent("Sources/TillServer/Metrics/ServerMetrics.swift"),
            encoding: .utf8
        )
        let label = try Regex(#"label: "(till_[a-z_]+)""#, as: (Substring, Substring).self)
        let names = Set(source.matches(of: label).map { String($0.output.1) })
        #expect(names.count >= 20, "\(names)")
        let docs = try String(contentsOf: LayoutTests.root.appendingPathComponent("docs/api.md"), encoding: .utf8)
        let missing = names.filter { !docs.contains("`\($0)`") }.sorted()
        #expect(missing.isEmpty, "docs/api.md's table of /metrics lacks \(missing)")
    }

    @Test(arguments: TestDatabase.all) func theQueueGaugesSeeWaitingSubmissions(_ database: TestDatabase) async throws {
        try await ServerFixture.run(database: database, confirmation: .init(maximumAttempts: 1)) { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                fixture.simulator.faults.add(try FaultRule(parsing: "sandbox:serverAPI:outage=503"))
                let purchase = try await fixture.buy("pro")
                let answer = try await call(
                    client,
                    .post,
                    "/v1/receipts?wait=60",
                    body(["customerId": "bob", "signedTransaction": purchase.signedTransaction!]),
                    token: fixture.app.appKey
                )
                #expect((answer.object["submission"] as? [String: Any])?["state"] as? String == "deadLettered")
                let (_, exposition, _) = try await text(client, "/metrics")
                let lines = Set(exposition.split(separator: "\n").map(String.init))
                #expect(lines.contains(#"till_queue_depth{state="deadLettered"} 1.0"#))
                #expect(lines.contains(#"till_confirmations_total{result="deadLettered",status="HTTP 503"} 1"#))
            }
        }
    }
}
