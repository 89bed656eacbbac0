import Foundation
import Hummingbird
import TillCatalogue
import TillConsole
import TillContract
import TillCore
import TillHTTPKit
import TillLedger

/// Finding a customer, a customer's page (what they have, their purchases, their timeline) and the operator's changes
/// by hand, which go through the ledger (`Ledger.grant`, `revoke`, `adjustBalance`) as the admin API's do.
extension ConsolePages {
    func customers(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let section = try await self.section("/console/customers", request, context)
        guard let app = section.app else { return section.noApp }
        var page = section.common
        let text = request.uri.queryParameters.get("q").map { String($0) } ?? ""
        page["query"] = text
        if !text.trimmingCharacters(in: .whitespaces).isEmpty {
            let matches = try await server.customers.search(bundleId: app.bundleId, text: text)
            page["searched"] = true
            page["resultCount"] = matches.count == 1 ? "1 customer" : "\(matches.count) customers"
            page["results"] = matches.map { match -> [String: Any] in
                [
                    "customerId": match.customerId,
                    "href": customerHref(match.customerId, app: app.bundleId),
                    "matchedBy": CustomersWords.matchedBy(match.matchedBy),
                    "detail": match.detail,
                ]
            }
            // One exact answer: straight to the customer.
            if matches.count == 1, matches[0].matchedBy != .customerIdPrefix {
                return ConsolePage.redirect(customerHref(matches[0].customerId, app: app.bundleId))
            }
        }
        return ConsolePage.html("customers", page)
    }

    func customerHref(_ customerId: String, app: String) -> String {
        "/console/customers/\(Readable.percentEncoded(customerId))?app=\(Readable.percentEncoded(app))"
    }

    func customer(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let section = try await self.section("/console/customers", request, context)
        guard let app = section.app else { return section.noApp }
        let asked: String
        do {
            asked = try context.customerParameter()
        } catch {
            guard let error = TillHTTPError.refusal(error) else { throw error }
            return section.failure(error)
        }
        let view = try await server.customers.customer(bundleId: app.bundleId, customerId: asked)
        let ledger = try await server.customers.ledgerRows(bundleId: app.bundleId, customerId: asked)
        let timeline = try await server.customers.timeline(bundleId: app.bundleId, customerId: asked)
        let catalogue = try await server.catalogue.products(bundleId: app.bundleId)
        let manual = Set(ledger.filter { $0.source == .operator }.map(\.transactionId))
        var page = section.common
        page["customerId"] = view.customerId
        if view.customerId != asked { page["searchedAs"] = asked }
        if let firstSeen = view.firstSeen { page["firstSeen"] = Readable.time(firstSeen) }
        page["base"] = "/console/customers/" + Readable.percentEncoded(view.customerId)
        page["entitlements"] = view.entitlements.map { entitlement -> [String: Any] in
            var entry: [String: Any] = [
                "id": entitlement.id,
                "productId": entitlement.productId,
                "transactionId": entitlement.transactionId,
                "environment": entitlement.environment,
                "manual": manual.contains(entitlement.transactionId),
                "provisional": entitlement.provisional,
            ]
            if let expires = entitlement.expiresDate { entry["expires"] = Readable.time(expires) }
            return entry
        }
        page["balances"] = (view.balances.additionalProperties).sorted { $0.key < $1.key }.map {
            ["credit": $0.key, "amount": Readable.grouped($0.value)]
        }
        page["guests"] = timeline.guests
        page["products"] = catalogue.map {
            ["productId": $0.productId, "title": $0.title, "type": $0.type.rawValue]
        }
        page["credits"] = Array(Set(catalogue.flatMap { $0.credits.keys } + view.balances.additionalProperties.keys))
            .sorted()
        page["revocable"] = ledger.filter { $0.revocationDate == nil }.map { row -> [String: Any] in
            [
                "value": "\(row.environment.rawValue)|\(row.transactionId)",
                "label": "\(row.productId) · \(row.transactionId) · \(row.environment.rawValue)"
                    + (row.source == .operator ? " · manual" : ""),
            ]
        }
        page["adjustmentId"] = "console-" + ConsoleSessions.randomToken().prefix(16)
        page["purchases"] = ledger.reversed().map { row -> [String: Any] in
            var entry: [String: Any] = [
                "transactionId": row.transactionId,
                "productId": row.productId,
                "purchased": Readable.time(row.purchaseDate),
                "expires": row.expiresDate.map(Readable.time) ?? "—",
                "price": row.price.map { "\(Readable.money($0)) \(row.currency ?? "")" } ?? "—",
                "state": CustomersWords.state(of: row),
                "manual": row.source == .operator,
                "source": CustomerTimelineWords.source(row.source),
                "environment": row.environment.rawValue,
            ]
            if row.originalTransactionId != row.transactionId { entry["original"] = row.originalTransactionId }
            return entry
        }
        page["limit"] = 50
        page["timeline"] = timeline.entries.map { entry -> [String: Any] in
            [
                "iso": Readable.iso(entry.at),
                "when": Readable.time(entry.at),
                "kind": entry.kind.rawValue + (entry.manual ? " manual" : ""),
                "kindLabel": CustomersWords.kind(entry.kind),
                "manual": entry.manual,
                "title": entry.title,
                "lines": entry.lines,
            ]
        }
        return ConsolePage.html("customer", page)
    }

    /// The customer of an action's path, and where to go back to.
    private func customerAction(_ request: Request, _ context: ServerRequestContext) async throws
        -> (app: ServerApp, customerId: String, back: String)
    {
        let app = try await actionApp(request, context)
        let customerId = try context.customerParameter()
        return (app, customerId, customerHref(customerId, app: app.bundleId))
    }

    func grant(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let (app, customerId, back) = try await customerAction(request, context)
        let productId = context.form["product"] ?? ""
        return try await act(
            .grant,
            context,
            bundleId: app.bundleId,
            target: "\(customerId): \(productId)",
            back: back,
            done: "Granted \(productId) to \(customerId)."
        ) {
            var expires: Int64?
            if let text = context.form["expires"], !text.isEmpty {
                guard let day = Readable.day(text) else {
                    throw TillHTTPError.badRequest("invalidExpiry", "until is a date (2026-12-31)")
                }
                expires = day + FigureChange.dayLength
            }
            try await server.ledger.grant(
                bundleId: app.bundleId,
                customerId: customerId,
                productId: productId,
                expiresDate: expires,
                note: context.form["note"] ?? "",
                app: app,
                catalogue: try await server.catalogue.products(of: app.bundleId)
            )
        }
    }

    func revoke(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let (app, customerId, back) = try await customerAction(request, context)
        let parts = (context.form["transaction"] ?? "").split(separator: "|", maxSplits: 1).map { String($0) }
        return try await act(
            .revoke,
            context,
            bundleId: app.bundleId,
            target: "\(customerId): \(parts.last ?? "")",
            back: back,
            done: "Revoked \(parts.last ?? "")."
        ) {
            guard parts.count == 2 else {
                throw TillHTTPError.badRequest("invalidTransaction", "choose a purchase to revoke")
            }
            try await server.ledger.revoke(
                bundleId: app.bundleId,
                customerId: customerId,
                transactionId: parts[1],
                environment: AppStoreEnvironment(parts[0]),
                note: context.form["note"] ?? "",
                catalogue: try await server.catalogue.products(of: app.bundleId)
            )
        }
    }

    func adjust(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let (app, customerId, back) = try await customerAction(request, context)
        let credit = (context.form["credit"] ?? "").trimmingCharacters(in: .whitespaces)
        let deltaText = (context.form["delta"] ?? "").trimmingCharacters(in: .whitespaces)
        return try await act(
            .adjustBalance,
            context,
            bundleId: app.bundleId,
            target: "\(customerId): \(credit) \(deltaText)",
            back: back,
            done: "\(credit) adjusted by \(deltaText)."
        ) {
            guard let delta = Int64(deltaText) else {
                throw TillHTTPError.badRequest("invalidAmount", "the amount is a whole number")
            }
            _ = try await server.ledger.adjustBalance(
                bundleId: app.bundleId,
                customerId: customerId,
                credit: credit,
                delta: delta,
                requestId: context.form["requestId"] ?? "",
                note: context.form["note"] ?? ""
            )
        }
    }
}

/// Words the customer pages use.
enum CustomersWords {
    static func matchedBy(_ how: CustomerMatch.MatchedBy) -> String {
        switch how {
        case .customerId: "customer id"
        case .customerIdPrefix: "customer id starting so"
        case .guestId: "guest id"
        case .transactionId: "transaction id"
        case .originalTransactionId: "original transaction id"
        }
    }

    static func kind(_ kind: TimelineEntry.Kind) -> String {
        switch kind {
        case .event: "event"
        case .submission: "submission"
        case .notification: "notification"
        case .consumption: "consumption"
        case .activity: "activity"
        }
    }

    static func state(of row: LedgerRecord) -> String {
        if let reason = row.revocationReason {
            return "revoked (\(reason.rawValue))" + (row.revocationDetail.map { ": \($0)" } ?? "")
        }
        return row.confirmed ? "confirmed" : "provisional"
    }
}

enum CustomerTimelineWords {
    static func source(_ source: LedgerSource) -> String {
        switch source {
        case .submission: "submission"
        case .notification: "notification"
        case .transactionHistory: "catch-up"
        case .operator: "manual"
        }
    }
}
