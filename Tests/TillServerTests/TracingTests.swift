import Foundation
import NIOHTTP1
import Testing
import TillTestSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Traces (docs/tracing.md), from the real `till serve` to an OTLP/HTTP collector whose decoder is OpenTelemetry's own
/// (`judge/otlp_judge.py`, the `opentelemetry-proto` package): a purchase is one trace, from the app's request through
/// verification, the ledger's transaction, the confirmation job, Apple's answer and each webhook attempt, continuing
/// the app's `traceparent`, with the customer and the transactions as attributes and no secret among them.
@Suite(.sharingTheMachine, .serialized, .timeLimit(.minutes(10)))
struct TracingTests {
    static let appTrace = "0af7651916cd43dd8448eb211c80319c"
    static let appSpan = "b7ad6b7169203331"

    @Test(
        .enabled(if: Prerequisite.otlpDecoder.shouldRun, Comment(rawValue: Prerequisite.otlpDecoder.skipMessage)),
        .enabled(if: Prerequisite.tillExecutable.shouldRun, Comment(rawValue: Prerequisite.tillExecutable.skipMessage)),
        arguments: TestDatabase.all
    )
    func aPurchaseIsOneTraceFromTheAppsRequestToItsWebhooks(database: TestDatabase) async throws {
        try Prerequisite.otlpDecoder.require()
        try Prerequisite.tillExecutable.require()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "till-traces-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let collected = directory.appendingPathComponent("collected.jsonl")
        let judge = try await OTLPJudge.start(output: collected)
        defer { judge.stop() }
        let till = try await TillProcess.start(
            [
                "serve", "--port", "0", "--simulator-port", "0",
                "--database-url", try await database.freshURL(),
            ],
            environment: [
                // An address without a path: the exporter posts to /v1/traces.
                "TILL_TRACING_ENDPOINT": "http://127.0.0.1:\(judge.port)",
                "TILL_SIMULATOR_DATABASE": ":memory:",
                "TILL_CONTENT_DIRECTORY": directory.appendingPathComponent("content").path,
            ],
            directory: directory
        )
        var stopped = false
        defer { if !stopped { till.kill(SIGKILL) } }
        // The banner's first line says it listens; the rest (the demo app, its key) may still be on its way.
        for _ in 0..<100 where !till.output.contains("sandbox device") { try await Task.sleep(for: .milliseconds(100)) }
        let banner = till.output
        let operatorToken = try #require(Self.word(after: "(Authorization: Bearer ", in: banner))
        let appKey = try #require(Self.word(after: "app key ", in: banner)).trimmingCharacters(in: [","])
        let device = try #require(Self.word(after: "sandbox device ", in: banner))
        let simulatorBase = try #require(Self.word(after: "simulator    ", in: banner))
        let bundleId = "com.example.till"

        let admin = JSONHTTP(base: till.base, token: operatorToken)
        let endpoint = try await admin.post(
            "/admin/v1/apps/\(bundleId)/webhooks",
            ["url": "http://127.0.0.1:\(judge.port)/hook"]
        )
        #expect(endpoint.status == 201, "\(endpoint)")
        let webhookSecret = try #require(endpoint.object["secret"] as? String)
        let simulator = JSONHTTP(base: simulatorBase)
        func purchase(_ productId: String) async throws -> String {
            let paid = try await simulator.post(
                "/storekit/sandbox/payments",
                ["deviceId": device, "bundleId": bundleId, "productId": productId]
            )
            return try #require(paid.object["signedTransaction"] as? String, "\(paid)")
        }
        let app = JSONHTTP(base: till.base, token: appKey)
        let jws = try await purchase("pro")
        let accepted = try await app.send(
            .POST,
            "/v1/receipts?wait=10",
            ["customerId": "alice", "signedTransaction": jws],
            headers: [("traceparent", "00-\(Self.appTrace)-\(Self.appSpan)-01")]
        )
        #expect(accepted.status == 200, "\(accepted)")
        let transactionId = try #require(
            ((accepted.object["customer"] as? [String: Any])?["entitlements"] as? [[String: Any]])?.first?[
                "transactionId"
            ] as? String,
            "\(accepted)"
        )
        // The app said not to sample: nothing of that trace is exported.
        let unsampledTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
        let unsampled = try await app.send(
            .POST,
            "/v1/receipts",
            ["customerId": "bob", "signedTransaction": try await purchase("gems.100")],
            headers: [("traceparent", "00-\(unsampledTrace)-00f067aa0ba902b7-00")]
        )
        #expect(unsampled.status == 202, "\(unsampled)")
        // A malformed traceparent is dropped: the request is answered, in a trace of its own.
        let malformed = try await app.send(
            .GET,
            "/v1/products",
            headers: [("traceparent", "00-\(String(repeating: "0", count: 32))-\(Self.appSpan)-01")]
        )
        #expect(malformed.status == 200, "\(malformed)")
        // So is a version this server does not read; a tracestate is dropped, its traceparent kept.
        let otherVersion = try await app.send(
            .GET,
            "/v1/products",
            headers: [("traceparent", "01-\(Self.appTrace)-\(Self.appSpan)-01")]
        )
        #expect(otherVersion.status == 200, "\(otherVersion)")
        let keptTrace = "5a1b2c3d4e5f60718293a4b5c6d7e8f9"
        let withState = try await app.send(
            .GET,
            "/v1/products",
            headers: [("traceparent", "00-\(keptTrace)-\(Self.appSpan)-01"), ("tracestate", "not, a = tracestate")]
        )
        #expect(withState.status == 200, "\(withState)")
        // Purchases at once, each in its own trace: on SQLite a group commit runs their transactions on one task, and
        // each purchase's confirmation and events must still continue its own trace.
        let concurrentTraces = (0..<8).map { String(format: "%032x", 0xc0ffee00 + $0) }
        var concurrentPurchases: [String] = []
        for _ in concurrentTraces { concurrentPurchases.append(try await purchase("gems.100")) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, (traceId, signed)) in zip(concurrentTraces, concurrentPurchases).enumerated() {
                group.addTask {
                    let answer = try await app.send(
                        .POST,
                        "/v1/receipts?wait=10",
                        ["customerId": "carol\(index)", "signedTransaction": signed],
                        headers: [("traceparent", "00-\(traceId)-\(Self.appSpan)-01")]
                    )
                    #expect(answer.status == 200, "\(answer)")
                }
            }
            try await group.waitForAll()
        }

        // The purchase's events reach the webhook: the first in the app's trace (the submission's transaction wrote
        // it); Apple's confirmation of it in the trace of whichever change recorded it (the confirmation, or Apple's
        // notification when it came first).
        var webhooks: [[String: Any]] = []
        for _ in 0..<300 {
            webhooks = try Self.records(in: collected).filter { $0["kind"] as? String == "webhook" }
            let traced = Set(
                webhooks.compactMap { ($0["traceparent"] as? String)?.split(separator: "-").dropFirst().first }
            )
            if traced.isSuperset(of: ([Self.appTrace] + concurrentTraces).map { Substring($0) })
                && webhooks.contains(where: { $0["type"] as? String == "purchase.confirmed" })
            {
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        // A graceful stop exports what is left.
        #expect(await till.stop() == 0, "\(till.output)")
        stopped = true

        let records = try Self.records(in: collected)
        // Every webhook request received up to the stop: an attempt made after the wait above ended (another event's,
        // on a loaded machine) has its span exported at the stop, and its request is among these.
        webhooks = records.filter { $0["kind"] as? String == "webhook" }
        #expect(!records.contains { $0["kind"] as? String == "undecodable" }, "\(records)")
        let spans = records.filter { $0["kind"] as? String == "span" }.map(Span.init)
        #expect(!spans.contains { $0.traceId == unsampledTrace }, "an unsampled trace was exported")
        let trace = spans.filter { $0.traceId == Self.appTrace }
        let byId = Dictionary(trace.map { ($0.spanId, $0) }, uniquingKeysWith: { first, _ in first })
        func only(_ name: String, where condition: (Span) -> Bool = { _ in true }) throws -> Span {
            let found = trace.filter { $0.name == name && condition($0) }
            #expect(found.count == 1, "\(found.count) spans \(name) in \(trace.map(\.name))")
            return try #require(found.first)
        }
        // The app's request, under the app's span.
        let request = try only("/v1/receipts")
        #expect(request.kind == "SPAN_KIND_SERVER" && request.parent == Self.appSpan)
        #expect(request.service == "till")
        let submission = try only("submission")
        #expect(submission.parent == request.spanId)
        #expect(submission.attributes["till.customer_id"] as? String == "alice")
        #expect(submission.attributes["till.bundle_id"] as? String == bundleId)
        #expect((submission.attributes["till.transaction_ids"] as? [String]) == [transactionId])
        #expect(try only("verification").parent == submission.spanId)
        let recorded = try only("ledger.transaction") { $0.attributes["till.source"] as? String == "submission" }
        #expect(recorded.parent == submission.spanId)
        // The confirmation job continues the transaction that queued it; Apple's answer is its child.
        let confirmation = try only("confirmation")
        #expect(confirmation.kind == "SPAN_KIND_CONSUMER" && confirmation.parent == recorded.spanId)
        #expect(confirmation.attributes["till.customer_id"] as? String == "alice")
        #expect((confirmation.attributes["till.transaction_ids"] as? [String]) == [transactionId])
        let apple = trace.filter { $0.parent == confirmation.spanId && $0.kind == "SPAN_KIND_CLIENT" }
        #expect(!apple.isEmpty, "no call to Apple under the confirmation: \(trace.map(\.name))")
        #expect(apple.allSatisfy { ($0.attributes["server.address"] as? String) == "127.0.0.1" })
        // The webhook attempt of the purchase's first event, in the trace, under the transaction that wrote it.
        let initial = try only("webhook.attempt") { $0.attributes["till.event_type"] as? String == "purchase.initial" }
        #expect(initial.parent == recorded.spanId)
        // Every attempt, in whichever trace: a client span, its answer, and its request carried its traceparent.
        for attempt in spans.filter({ $0.name == "webhook.attempt" }) {
            #expect(attempt.kind == "SPAN_KIND_CLIENT")
            #expect(attempt.attributes["till.customer_id"] as? String == "alice" || attempt.traceId != Self.appTrace)
            #expect(attempt.attributes["till.event_id"] as? String != nil)
            #expect((attempt.attributes["till.event_type"] as? String)?.isEmpty == false)
            #expect(attempt.attributes["http.response.status_code"] as? Int == 200)
            #expect(
                webhooks.contains { $0["traceparent"] as? String == "00-\(attempt.traceId)-\(attempt.spanId)-01" },
                "the webhook of \(attempt.spanId) did not carry its traceparent"
            )
        }
        // One tree: every span's parent is in the trace, or is the app's.
        for span in trace {
            #expect(span.parent == Self.appSpan || byId[span.parent] != nil, "\(span.name)'s parent is missing")
        }
        // The catch-up at start is a trace of its own, its calls to Apple its children.
        let catchUps = spans.filter { $0.name == "catch-up" && $0.parent == "" }
        #expect(!catchUps.isEmpty, "no catch-up run traced")
        #expect(
            catchUps.allSatisfy { run in spans.contains { $0.parent == run.spanId && $0.kind == "SPAN_KIND_CLIENT" } },
            "a catch-up run without its calls to Apple"
        )
        // The malformed traceparents' requests are roots of their own; the one with a tracestate continued its trace.
        let products = spans.filter { $0.name == "/v1/products" }
        #expect(products.count == 3, "\(products.map(\.traceId))")
        let continued = products.filter { $0.traceId == keptTrace }
        #expect(continued.count == 1 && continued.first?.parent == Self.appSpan)
        let roots = products.filter { $0.traceId != keptTrace }
        #expect(roots.count == 2 && roots.allSatisfy { $0.parent == "" && $0.traceId != Self.appTrace })
        // Each purchase sent at once: its confirmation and its first event's webhook attempt continue its own trace,
        // under its own transaction.
        for (index, traceId) in concurrentTraces.enumerated() {
            let own = spans.filter { $0.traceId == traceId }
            let customer = "carol\(index)"
            let recorded = own.filter {
                $0.name == "ledger.transaction" && $0.attributes["till.source"] as? String == "submission"
            }
            let confirmations = own.filter { $0.name == "confirmation" }
            #expect(recorded.count == 1 && confirmations.count == 1, "\(customer): \(own.map(\.name))")
            #expect(confirmations.allSatisfy { $0.attributes["till.customer_id"] as? String == customer })
            #expect(confirmations.first?.parent == recorded.first?.spanId, "\(customer)'s confirmation")
            let attempts = own.filter { $0.name == "webhook.attempt" }
            #expect(
                !attempts.isEmpty && attempts.allSatisfy { $0.attributes["till.customer_id"] as? String == customer }
            )
            #expect(attempts.contains { $0.parent == recorded.first?.spanId }, "\(customer)'s first event")
        }
        // No secret in any attribute: the app key, the operator token, the webhook secret, the signed transaction.
        let text = spans.map { "\($0.attributes)" }.joined()
        for secret in [appKey, operatorToken, webhookSecret, jws] {
            #expect(!text.contains(secret), "a secret is in the spans")
        }
        // Nor in the log: swift-otel's diagnostics lose the carrier (the request's headers) it would print.
        let logged = till.output.split(separator: "\n").filter { $0.hasPrefix("20") }
        #expect(!logged.contains { $0.contains("carrier") })
        for secret in [appKey, operatorToken, webhookSecret, jws] {
            #expect(!logged.contains { $0.contains(secret) }, "a secret is in the log")
        }
        // The request's log line carries the trace.
        #expect(
            till.output.split(separator: "\n").contains {
                $0.contains("POST /v1/receipts") && $0.contains("trace_id=\(Self.appTrace)")
            },
            "\(till.output)"
        )
    }

    /// A span as the judge decoded it.
    struct Span {
        var traceId: String
        var spanId: String
        var parent: String
        var name: String
        var kind: String
        var service: String?
        var attributes: [String: Any]

        init(_ record: [String: Any]) {
            traceId = record["traceId"] as? String ?? ""
            spanId = record["spanId"] as? String ?? ""
            parent = record["parentSpanId"] as? String ?? ""
            name = record["name"] as? String ?? ""
            kind = record["spanKind"] as? String ?? ""
            service = record["service"] as? String
            attributes = record["attributes"] as? [String: Any] ?? [:]
        }
    }

    static func records(in file: URL) throws -> [[String: Any]] {
        guard let data = FileManager.default.contents(atPath: file.path) else { return [] }
        return try String(decoding: data, as: UTF8.self).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    /// The word after `marker` in the banner.
    static func word(after marker: String, in text: String) -> String? {
        guard let range = text.range(of: marker) else { return nil }
        return text[range.upperBound...].split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == ")" }).first.map(
            String.init
        )
    }
}

/// `judge/otlp_judge.py` running: an OTLP/HTTP collector and webhook receiver on a port of its own.
final class OTLPJudge: Sendable {
    let process: Process
    let port: Int

    private init(process: Process, port: Int) {
        self.process = process
        self.port = port
    }

    static func start(output: URL) async throws -> OTLPJudge {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", root.appendingPathComponent("judge/otlp_judge.py").path, output.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardInput = FileHandle.nullDevice
        // Not the test process's standard error: a child holding it open keeps `swift test` waiting for its end.
        let errors = output.deletingPathExtension().appendingPathExtension("stderr")
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: errors)
        try ChildProcess.launch(process)
        // Its first line is its port.
        let line = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var pending = Data()
                var answered = false
                ChildProcess.readChunks(pipe.fileHandleForReading) { chunk in
                    pending.append(chunk)
                    if !answered, let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                        answered = true
                        continuation.resume(returning: String(decoding: pending[..<newline], as: UTF8.self))
                    }
                }
                if !answered { continuation.resume(returning: "") }
            }
        }
        guard let port = Int(line) else {
            process.terminate()
            throw TestSupportFailure("otlp_judge.py did not say its port (it printed \(line.debugDescription))")
        }
        return OTLPJudge(process: process, port: port)
    }

    /// SIGKILL: a test process may block SIGTERM, and its children inherit the mask. What the judge was sent is
    /// written before it answers.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
