import AsyncHTTPClient
import Foundation
import Hummingbird
import Logging
import SQLKit
import ServiceLifecycle
import Synchronization
import Testing
import TillAppStore
import TillCatalogue
import TillContract
import TillCore
import TillDevelopment
import TillHTTPKit
import TillLedger
import TillStorage
import TillTestSupport
import TillWebhooks

@testable import TillServer
@testable import TillSimulator

/// Webhooks (docs/events.md): endpoints per app, Standard Webhooks signatures (judged by the `standardwebhooks`
/// package), rotation, pause, replay, every attempt visible, and the safety rules of where deliveries may go.
@Suite(.sharingTheMachine)
struct WebhookTests {
    /// Deliveries to loopback receivers, retried fast.
    static func loopback(_ configuration: inout ServerConfiguration) {
        configuration.webhooks = WebhookSettings(
            allowHTTPToLoopback: true,
            connectTimeout: .seconds(2),
            timeout: .seconds(3),
            answerPrefixBytes: 64,
            schedule: [.milliseconds(100), .milliseconds(300)]
        )
    }

    /// Runs `body` with a receiver listening, an endpoint of the fixture's app pointing at it, and the webhook worker
    /// (and the consumption worker) running.
    static func withWebhooks(
        _ fixture: ServerFixture,
        receiver: WebhookReceiver = WebhookReceiver(),
        eventTypes: [EventType]? = nil,
        path: String = "/till/events",
        _ body: (WebhookReceiver, Components.Schemas.WebhookEndpointWithSecret) async throws -> Void
    ) async throws {
        try await withServices({ receiver.application(onServerRunning: $0) }) { port in
            let created = try await fixture.server.webhookEndpoints.create(
                bundleId: ServerFixture.bundleId,
                .init(url: "http://127.0.0.1:\(port)\(path)", eventTypes: eventTypes)
            )
            receiver.secret = created.secret
            try await withServices({ _ in
                ServiceGroup(
                    configuration: .init(
                        services: [WebhookWorker(server: fixture.server), ConsumptionWorker(server: fixture.server)],
                        gracefulShutdownSignals: [],
                        logger: .init(label: "test")
                    )
                )
            }) { _ in
                try await body(receiver, created)
            }
        }
    }

    /// Webhook bodies: their `timestamp` is RFC 3339.
    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()

    /// The events of the deliveries a receiver got, by webhook-id, in the order they first came.
    static func received(_ receiver: WebhookReceiver) throws -> [Event] {
        var seen: Set<String> = []
        var events: [Event] = []
        for delivery in receiver.deliveries where delivery.status < 300 && seen.insert(delivery.id).inserted {
            events.append(try Self.decoder.decode(WebhookPayload.self, from: Data(delivery.body)).data)
        }
        return events
    }

    static func purchase(_ fixture: ServerFixture, _ productId: String, as customerId: String) async throws {
        let purchase = try await fixture.buy(productId)
        let result = try await fixture.server.intake.submit(
            SubmissionRequest(customerId: customerId, signedTransaction: purchase.signedTransaction),
            app: fixture.app
        )
        #expect(try await fixture.settled(result).state == .confirmed)
    }

    // MARK: Signatures

    @Test func aRotatedSecretSignsBesideTheNewOneUntilItsOverlapEnds() async throws {
        try await ServerFixture.run(configure: Self.loopback) { fixture in
            try await Self.withWebhooks(fixture) { receiver, endpoint in
                try await Self.purchase(fixture, "gems.100", as: "alice")
                try await waitUntil { receiver.deliveries.count >= 2 }
                #expect(receiver.deliveries.allSatisfy { $0.verified && !$0.signatures.contains(" ") })
                let old = endpoint.secret
                let rotated = try await fixture.server.webhookEndpoints.rotateSecret(
                    bundleId: ServerFixture.bundleId,
                    id: endpoint.endpoint.id,
                    overlap: .seconds(3600)
                )
                #expect(rotated.secret != old && rotated.secret.hasPrefix("whsec_"))
                #expect(rotated.previousSecretExpiresAt != nil)
                // The receiver still has the old secret: the second signature lets it switch when it likes.
                receiver.reset()
                try await Self.purchase(fixture, "pro", as: "alice")
                try await waitUntil { receiver.deliveries.count >= 2 }
                for delivery in receiver.deliveries {
                    #expect(delivery.verified, "the old secret still verifies")
                    #expect(delivery.signatures.split(separator: " ").count == 2)
                    #expect(
                        StandardWebhookVerifier.isValid(
                            body: delivery.body,
                            id: delivery.id,
                            timestamp: delivery.timestamp,
                            signatures: delivery.signatures,
                            secret: rotated.secret
                        )
                    )
                }
                try await Self.judge(receiver.deliveries, secrets: [rotated.secret], expect: 2)
                try await Self.judge(receiver.deliveries, secrets: [old], expect: 2)
                // A rotation without overlap: the new secret alone.
                let again = try await fixture.server.webhookEndpoints.rotateSecret(
                    bundleId: ServerFixture.bundleId,
                    id: endpoint.endpoint.id,
                    overlap: .zero
                )
                receiver.secret = again.secret
                receiver.reset()
                _ = try await fixture.server.ledger.debit(
                    bundleId: ServerFixture.bundleId,
                    customerId: "alice",
                    credit: "gems",
                    amount: 1,
                    requestId: "r1"
                )
                try await waitUntil { receiver.deliveries.count >= 1 }
                #expect(receiver.deliveries.allSatisfy { $0.verified && !$0.signatures.contains(" ") })
                let view = try await fixture.server.webhookEndpoints.endpoint(
                    bundleId: ServerFixture.bundleId,
                    id: endpoint.endpoint.id
                )
                #expect(view.previousSecretExpiresAt == nil)
            }
        }
    }

    // MARK: The operator's view

    @Test func aPausedEndpointLosesNothingAndAnEventCanBeReplayed() async throws {
        try await ServerFixture.run(configure: Self.loopback) { fixture in
            try await Self.withWebhooks(fixture, eventTypes: [.credits_purchased, .credits_debited]) {
                receiver,
                endpoint in
                let id = endpoint.endpoint.id
                let webhooks = fixture.server.webhookEndpoints
                _ = try await webhooks.update(bundleId: ServerFixture.bundleId, id: id, .init(enabled: false))
                try await Self.purchase(fixture, "gems.100", as: "alice")
                try await Self.purchase(fixture, "pro", as: "alice")
                for request in 1...3 {
                    _ = try await fixture.server.ledger.debit(
                        bundleId: ServerFixture.bundleId,
                        customerId: "alice",
                        credit: "gems",
                        amount: 10,
                        requestId: "r\(request)"
                    )
                }
                try await Task.sleep(for: .milliseconds(500))
                #expect(receiver.deliveries.isEmpty, "a paused endpoint is sent nothing")
                _ = try await webhooks.update(bundleId: ServerFixture.bundleId, id: id, .init(enabled: true))
                try await waitUntil { try Self.received(receiver).count == 4 }
                let events = try Self.received(receiver)
                #expect(
                    events.map(\._type) == [.credits_purchased, .credits_debited, .credits_debited, .credits_debited]
                )
                #expect(events.map(\.sequence) == events.map(\.sequence).sorted(), "in order")
                #expect(events.compactMap { $0.balanceChanges?.additionalProperties["gems"] } == [100, -10, -10, -10])

                // Every delivery and its answer is visible, once the worker has recorded the last answer (its next
                // round, after the receiver has the request).
                func delivered() async throws -> Page<WebhookDeliveryView> {
                    try await fixture.server.webhookHistory.deliveries(
                        bundleId: ServerFixture.bundleId,
                        endpointId: id,
                        state: .delivered
                    )
                }
                try await waitUntil { try await delivered().total == 4 }
                #expect(try await delivered().items.allSatisfy { $0.lastAttempt?.status == 204 })

                // One event again, with its webhook-id; then everything since the first.
                let first = try #require(events.first)
                let one = try await fixture.server.webhookDeliveries.replay(
                    bundleId: ServerFixture.bundleId,
                    endpointId: id,
                    .init(eventId: first.id)
                )
                #expect(one == 1)
                try await waitUntil { receiver.deliveries.count == 5 }
                #expect(receiver.deliveries.last?.id == first.id && receiver.deliveries.last?.verified == true)
                // A delivery under way is not replayed again: the replayed one is recorded first.
                try await waitUntil {
                    try await fixture.server.webhookHistory.deliveries(
                        bundleId: ServerFixture.bundleId,
                        endpointId: id,
                        state: .pending
                    ).total == 0
                }
                let all = try await fixture.server.webhookDeliveries.replay(
                    bundleId: ServerFixture.bundleId,
                    endpointId: id,
                    .init(since: first.createdAt)
                )
                #expect(all == 4, "the endpoint's types only")
                try await waitUntil { receiver.deliveries.count == 9 }
                #expect(Array(receiver.deliveries.suffix(4)).map(\.id) == events.map(\.id))
                await #expect(throws: WebhookRefusal.self) {
                    _ = try await fixture.server.webhookDeliveries.replay(
                        bundleId: ServerFixture.bundleId,
                        endpointId: id,
                        .init(eventId: first.id, since: 0)
                    )
                }
            }
        }
    }

    @Test func aFailingReceiversAnswersAreKeptAndItsDeliveriesRetriedThenDeadLettered() async throws {
        try await ServerFixture.run(configure: {
            Self.loopback(&$0)
            $0.webhooks.retryFor = .seconds(2)
        }) { fixture in
            let receiver = WebhookReceiver()
            receiver.behaviour = .failVerbosely(status: 500, bytes: 10_000)
            try await Self.withWebhooks(fixture, receiver: receiver) { receiver, endpoint in
                try await Self.purchase(fixture, "pro", as: "alice")
                try await waitUntil { receiver.count >= 3 }
                let deliveries = fixture.server.webhookHistory
                let page = try await deliveries.deliveries(
                    bundleId: ServerFixture.bundleId,
                    endpointId: endpoint.endpoint.id,
                    state: nil
                )
                let first = try #require(page.items.first { $0.eventType == .purchase_initial })
                let detail = try await deliveries.delivery(
                    bundleId: ServerFixture.bundleId,
                    endpointId: endpoint.endpoint.id,
                    id: first.id
                )
                let attempt = try #require(detail.attempts.first)
                #expect(attempt.status == 500 && attempt.answer?.utf8.count == 64, "only the answer's first 64 bytes")
                #expect(attempt.error?.contains("500") == true && attempt.url.hasSuffix("/till/events"))
                // Retried until the deadline, then dead-lettered; the endpoint shows it.
                try await waitUntil(timeout: .seconds(30)) {
                    try await deliveries.deliveries(
                        bundleId: ServerFixture.bundleId,
                        endpointId: endpoint.endpoint.id,
                        state: .deadLettered
                    ).total == 2
                }
                let view = try await fixture.server.webhookEndpoints.endpoint(
                    bundleId: ServerFixture.bundleId,
                    id: endpoint.endpoint.id
                )
                #expect(
                    view.health.deadLettered == 2 && view.health.pending == 0 && view.health.consecutiveFailures > 0
                )
                // Replayed once the receiver is fixed, it arrives.
                receiver.behaviour = .accept
                _ = try await fixture.server.webhookDeliveries.replay(
                    bundleId: ServerFixture.bundleId,
                    endpointId: endpoint.endpoint.id,
                    .init(since: 0)
                )
                try await waitUntil { try Self.received(receiver).count == 2 }
            }
        }
    }

    // MARK: Where deliveries may go

    @Test func anEndpointMustBeHTTPSAndPublicUnlessASettingSaysOtherwise() async throws {
        try await ServerFixture.run { fixture in
            let webhooks = fixture.server.webhookEndpoints
            for url in [
                "http://127.0.0.1:9/hook", "https://10.0.0.8/hook", "https://169.254.169.254/latest",
                "ftp://example.com/x",
                "https://user:pass@example.com/x", "https://[::1]/x", "https://[fd00::1]/x", "https://0.0.0.0/x",
                "https://192.168.1.20/x", "https://100.64.0.1/x", "not a url", "https://[::ffff:10.0.0.1]/x",
                // 10.0.0.1 as the system resolver also reads it (a delivery refused it after resolving; now the
                // endpoint is refused when it is made), and a port that does not exist.
                "https://167772161/x", "https://012.0.0.1/x", "https://10.1/x", "https://0x0a.0.0.1/x",
                "https://192.168.1.1./x", "https://example.com:99999/x", "https://example.com:0/x",
            ] {
                await #expect(throws: WebhookRefusal.self, "\(url)") {
                    _ = try await webhooks.create(bundleId: ServerFixture.bundleId, .init(url: url))
                }
            }
            // Names that only look numeric are names.
            #expect(WebhookAddressPolicy.addressClass(ofLiteral: "cafe.be") == nil)
            #expect(WebhookAddressPolicy.addressClass(ofLiteral: "8.8.8.8.") == .public)
            let created = try await webhooks.create(
                bundleId: ServerFixture.bundleId,
                .init(url: "https://hooks.example.com/till", eventTypes: [.purchase_initial, .purchase_initial])
            )
            #expect(created.secret.hasPrefix("whsec_") && created.endpoint.eventTypes == [.purchase_initial])
            #expect(created.endpoint.enabled && created.endpoint.health.pending == 0)
        }
        // Without the setting (off by default in production), plain HTTP is refused even to loopback, and the message
        // names the setting that allows it, not the mode.
        let production = WebhookAddressPolicy(WebhookSettings(allowHTTPToLoopback: false))
        #expect(throws: WebhookRefusal.self) { try production.check(url: "http://127.0.0.1:8080/x") }
        do {
            _ = try production.check(url: "http://127.0.0.1:8080/x")
        } catch let refusal as WebhookRefusal {
            #expect(refusal.message.hasSuffix("with webhooks.allow-http-loopback (on by default in development mode)"))
        }
        var development = WebhookAddressPolicy(WebhookSettings(allowHTTPToLoopback: true))
        #expect((try? development.check(url: "http://127.0.0.1:8080/x")) != nil)
        #expect((try? development.check(url: "http://localhost:8080/x")) != nil)
        #expect((try? development.check(url: "http://example.com/x")) == nil, "plain HTTP only to loopback")
        #expect((try? development.check(url: "https://10.1.1.1/x")) == nil, "private addresses still refused")
        development.allowPrivateAddresses = true
        #expect((try? development.check(url: "https://10.1.1.1/x")) != nil)
        let classes: [(String, WebhookAddressPolicy.AddressClass)] = [
            ("8.8.8.8", .public), ("127.0.0.5", .loopback), ("10.2.3.4", .private), ("172.31.0.1", .private),
            ("172.32.0.1", .public), ("169.254.1.1", .linkLocal), ("224.0.0.1", .reserved), ("::1", .loopback),
            ("fe80::1", .linkLocal), ("fc00::1", .private), ("2001:db8::1", .reserved), ("::ffff:127.0.0.1", .loopback),
            ("64:ff9b::a00:1", .private), ("2606:4700::1111", .public),
        ]
        for (address, expected) in classes {
            #expect(WebhookAddressPolicy.addressClass(ofLiteral: address) == expected, "\(address)")
        }
    }

    /// The address is checked on the connection itself, after the name was resolved: a name that resolves to the
    /// server's own network is refused when the delivery connects, and so is a redirect there.
    @Test func aNameResolvingToLoopbackAndARedirectToAPrivateAddressAreRefusedWhenConnecting() async throws {
        try await ServerFixture.run(configure: {
            Self.loopback(&$0)
            $0.webhooks.allowHTTPToLoopback = false
        }) { fixture in
            let receiver = WebhookReceiver()
            try await withServices({ receiver.application(onServerRunning: $0) }) { port in
                // Created under a policy that knows only the name; the worker's policy refuses where it leads.
                let created = try await fixture.server.webhookEndpoints.create(
                    bundleId: ServerFixture.bundleId,
                    .init(url: "https://localhost:\(port)/till")
                )
                try await withServices({ _ in WebhookWorker(server: fixture.server) }) { _ in
                    try await Self.purchase(fixture, "pro", as: "alice")
                    let deliveries = fixture.server.webhookHistory
                    try await waitUntil(timeout: .seconds(30)) {
                        try await deliveries.deliveries(
                            bundleId: ServerFixture.bundleId,
                            endpointId: created.endpoint.id,
                            state: nil
                        ).items.contains { $0.attempts > 0 }
                    }
                    let page = try await deliveries.deliveries(
                        bundleId: ServerFixture.bundleId,
                        endpointId: created.endpoint.id,
                        state: nil
                    )
                    let attempt = try #require(page.items.compactMap(\.lastAttempt).first)
                    #expect(attempt.status == nil && attempt.error?.contains("loopback") == true, "\(attempt)")
                    #expect(receiver.count == 0, "nothing reached the loopback receiver")
                }
            }
        }
        // A redirect is followed only where the policy allows: to loopback in development, not to a private address.
        try await ServerFixture.run(configure: Self.loopback) { fixture in
            let receiver = WebhookReceiver()
            receiver.behaviour = .redirect(status: 307, location: "http://10.20.30.40/steal")
            try await Self.withWebhooks(fixture, receiver: receiver) { receiver, endpoint in
                try await Self.purchase(fixture, "pro", as: "alice")
                try await waitUntil { receiver.count >= 1 }
                let deliveries = fixture.server.webhookHistory
                try await waitUntil(timeout: .seconds(30)) {
                    try await deliveries.deliveries(
                        bundleId: ServerFixture.bundleId,
                        endpointId: endpoint.endpoint.id,
                        state: .pending
                    ).items.contains { $0.lastAttempt != nil }
                }
                let page = try await deliveries.deliveries(
                    bundleId: ServerFixture.bundleId,
                    endpointId: endpoint.endpoint.id,
                    state: .pending
                )
                let attempt = try #require(page.items.compactMap(\.lastAttempt).first)
                #expect(
                    attempt.url == "http://10.20.30.40/steal" && attempt.error?.contains("HTTPS") == true,
                    "\(attempt)"
                )
                // To another path of the receiver: followed, and delivered there.
                receiver.behaviour = .redirect(status: 308, location: "/till/moved")
                try await waitUntil(timeout: .seconds(30)) { receiver.deliveries.contains { $0.status == 204 } }
            }
        }
    }

    /// A receiver that never answers holds up its own deliveries only: purchases are acknowledged, and another app's
    /// endpoint receives its events, while attempts to it hang.
    @Test func aHangingReceiverHoldsUpNeitherPurchasesNorAnotherAppsDeliveries() async throws {
        try await ServerFixture.run(configure: {
            Self.loopback(&$0)
            $0.webhooks.timeout = .seconds(20)
        }) { fixture in
            let other = try await fixture.server.catalogue.createApp(
                ServerAppInput(bundleId: "com.example.other", name: "Other")
            )
            let hanging = WebhookReceiver()
            hanging.behaviour = .hang
            let healthy = WebhookReceiver()
            try await withServices({ healthy.application(onServerRunning: $0) }) { healthyPort in
                let otherEndpoint = try await fixture.server.webhookEndpoints.create(
                    bundleId: other.bundleId,
                    .init(url: "http://127.0.0.1:\(healthyPort)/other")
                )
                healthy.secret = otherEndpoint.secret
                try await Self.withWebhooks(fixture, receiver: hanging) { hanging, _ in
                    for index in 0..<10 {
                        _ = try await fixture.server.ledger.adjustBalance(
                            bundleId: ServerFixture.bundleId,
                            customerId: "c\(index)",
                            credit: "gems",
                            delta: 1,
                            requestId: "r",
                            note: "hang"
                        )
                    }
                    try await waitUntil { hanging.count >= 1 }
                    // Attempts to the hanging receiver are under way; a purchase is acknowledged meanwhile…
                    let purchase = try await fixture.buy("pro")
                    let result = try await fixture.server.intake.submit(
                        SubmissionRequest(customerId: "alice", signedTransaction: purchase.signedTransaction),
                        app: fixture.app
                    )
                    #expect(result.customer.entitlements.map(\.id) == ["pro"])
                    // …and the other app's backend gets its events.
                    for index in 0..<5 {
                        _ = try await fixture.server.ledger.adjustBalance(
                            bundleId: other.bundleId,
                            customerId: "o\(index)",
                            credit: "coins",
                            delta: 1,
                            requestId: "r",
                            note: "other app"
                        )
                    }
                    try await waitUntil { try Self.received(healthy).count == 5 }
                    #expect(healthy.deliveries.allSatisfy { $0.verified })
                    #expect(
                        hanging.deliveries.count <= WebhookSettings().concurrencyPerEndpoint,
                        "the hanging receiver got at most its share of attempts in flight"
                    )
                    hanging.behaviour = .accept
                    hanging.release()
                }
            }
        }
    }

    // MARK: The independent judge

    /// Runs `judge/webhook_judge.py` (the `standardwebhooks` package and the contract's schema) on deliveries, each
    /// checked with `secrets`; expects `expect` of them to verify.
    @discardableResult
    static func judge(_ deliveries: [WebhookReceiver.Delivery], secrets: [String], expect count: Int) async throws
        -> [String: Any]
    {
        guard Prerequisite.standardWebhooks.shouldRun else { return [:] }
        try Prerequisite.standardWebhooks.require()
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let spec: [String: Any] = [
            "openapi": root.appendingPathComponent("Client/Sources/TillContract/openapi.yaml").path,
            "deliveries": deliveries.map { delivery in
                [
                    "secrets": secrets,
                    "headers": [
                        "webhook-id": delivery.id, "webhook-timestamp": delivery.timestamp,
                        "webhook-signature": delivery.signatures,
                    ],
                    "body": Data(delivery.body).base64EncodedString(),
                    "receivedAt": delivery.receivedAt.timeIntervalSince1970,
                ] as [String: Any]
            },
        ]
        let (status, output) = try await ChildProcess.runPython(
            root.appendingPathComponent("Tests/TillServerTests/judge/webhook_judge.py").path,
            input: try JSONSerialization.data(withJSONObject: spec)
        )
        let summary = try #require(
            try? JSONSerialization.jsonObject(with: output) as? [String: Any],
            "the judge printed no JSON: \(String(decoding: output, as: UTF8.self))"
        )
        #expect(status == 0, "the judge refused: \(summary["errors"] ?? "")")
        #expect(summary["verified"] as? Int == count, "\(summary)")
        return summary
    }
}
