import Foundation
import NIOHTTP1
import TillContract
import TillCore
import TillDevelopment
import TillServer

/// What the app's own backend hears of the story: every change as an event, delivered as a Standard Webhook to the
/// receiver the demo runs beside the server (docs/events.md).
extension DemoWalkthrough {
    /// The events the backend received, once each, in the order they first arrived.
    var backendEvents: [Components.Schemas.Event] {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        var seen: Set<String> = []
        return world.backend.deliveries.compactMap { delivery in
            guard delivery.status < 300, seen.insert(delivery.id).inserted else { return nil }
            return try? decoder.decode(Components.Schemas.WebhookPayload.self, from: Data(delivery.body)).data
        }
    }

    /// The feed of the app's events (`GET /admin/v1/events`), all of it.
    func feed() async throws -> [Components.Schemas.Event] {
        var events: [Components.Schemas.Event] = []
        var cursor = ""
        while true {
            let answer = try await world.serverAdmin.send(
                .GET,
                "/admin/v1/events?bundleId=\(world.app.bundleId)&limit=1000&after=\(cursor)"
            )
            let page = try JSONDecoder().decode(Components.Schemas.EventPage.self, from: Data(answer.body))
            events += page.items
            cursor = page.nextCursor
            if !page.hasMore { return events }
        }
    }

    /// Prints the events the backend received since the last look (deliveries follow the changes by milliseconds:
    /// it waits for them, two seconds at most).
    func showBackendEvents() async {
        let recorded = (try? await feed().count) ?? 0
        _ = try? await wait(timeout: .seconds(2)) { backendEvents.count >= recorded ? true : nil }
        let events = backendEvents
        for event in events.dropFirst(shownEvents) { report.note("→ backend: " + Self.describe(event)) }
        shownEvents = events.count
    }

    /// `credits.purchased: alice, gems.100, gems +100 (submission)`.
    static func describe(_ event: Components.Schemas.Event) -> String {
        var parts: [String] = []
        if let customer = event.customer?.id { parts.append(customer) }
        if let product = event.product?.id { parts.append(product) }
        if let changes = event.balanceChanges?.additionalProperties, !changes.isEmpty {
            parts.append(
                changes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value > 0 ? "+" : "")\($0.value)" }
                    .joined(separator: ", ")
            )
        }
        if let refund = event.refund { parts.append("\(refund.share / 1000)% refunded") }
        if let transfer = event.transfer { parts.append("from \(transfer.fromCustomerId)") }
        if let note = event.source.note { parts.append("“\(note)”") }
        return "\(event._type.rawValue): " + parts.joined(separator: ", ") + " (\(event.source.kind.rawValue))"
    }

    func backend() async {
        await report.step(
            "What the app's backend received",
            """
            The app's own backend has a webhook endpoint on the server, added through the admin API. Every change of \
            the story reached it as an event, the same whatever told the server (the app, Apple's answer, a \
            notification), signed as Standard Webhooks. The same events are the feed, GET /admin/v1/events.
            """
        ) {
            let feed = try await feed()
            guard
                let (events, _) = try await wait(
                    timeout: .seconds(5),
                    { () -> [Components.Schemas.Event]? in
                        let events = backendEvents
                        return Set(events.map(\.id)).isSuperset(of: feed.map(\.id)) ? events : nil
                    }
                )
            else {
                report.fail("every event of the feed reached the backend — \(backendEvents.count) of \(feed.count)")
                return
            }
            let deliveries = world.backend.deliveries
            report.expect(
                deliveries.allSatisfy(\.verified),
                "all \(feed.count) events received, each signature checked (HMAC-SHA256 of id.timestamp.body, "
                    + "as docs/events.md shows)",
                otherwise: "\(deliveries.filter { !$0.verified }.count) signatures did not verify"
            )
            let order = events.filter { $0.customer?.id == DemoWorld.customer }.map(\.sequence)
            report.expect(
                order == order.sorted() && Set(events.map(\.id)) == Set(feed.map(\.id)),
                "the same events as the feed, \(DemoWorld.customer)'s in the order they happened",
                otherwise: "out of order or not the feed's"
            )
            let types = Dictionary(grouping: events, by: \._type).mapValues(\.count)
            report.note(
                types.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue) ×\($0.value)" }
                    .joined(separator: ", ")
            )
            let expected: [Components.Schemas.EventType] = [
                .credits_purchased, .purchase_initial, .purchase_nonRenewing, .purchase_confirmed,
                .subscription_renewed, .purchase_refunded,
            ]
            let missing = expected.filter { types[$0] == nil }
            report.expect(
                missing.isEmpty,
                "purchases, Apple's confirmations, renewals and the refund are all there",
                otherwise: "missing \(missing.map(\.rawValue))"
            )
        }
    }
}
