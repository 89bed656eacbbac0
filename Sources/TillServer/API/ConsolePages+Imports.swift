import Foundation
import Hummingbird
import TillAppStore
import TillCatalogue
import TillConsole
import TillContract
import TillCore
import TillHTTPKit
import TillLedger

/// The app's imports of existing customers (`Imports`, docs/operations.md): each one's progress while it runs (the
/// page reloads itself), its counts, its rows by outcome, and cancelling it. Started by `till import` or the admin API.
extension ConsolePages {
    typealias ImportOutcome = Components.Schemas.ImportRowOutcome

    /// The row lists of an import's page, in the order its tabs show them (nil: every row).
    static let importOutcomes: [(outcome: ImportOutcome?, label: String)] = [
        (nil, "All"), (.failed, "Failed"), (.refused, "Refused"), (.pending, "Pending"), (.imported, "Imported"),
        (.alreadyKnown, "Already known"),
    ]

    static func stateLabel(_ state: Components.Schemas.ImportState) -> String {
        switch state {
        case .receiving: "Receiving the file"
        case .running: "Running"
        case .finished: "Finished"
        case .cancelled: "Cancelled"
        }
    }

    static func kindLabel(_ kind: Components.Schemas.ImportRowKind?) -> String {
        switch kind {
        case .transactionId: "transaction id"
        case .appReceipt: "app receipt"
        case .signedTransaction: "signed transaction"
        case nil: "—"
        }
    }

    func importHref(_ id: String, app: String) -> String {
        "/console/imports/\(Readable.percentEncoded(id))?app=\(Readable.percentEncoded(app))"
    }

    /// What the list and an import's page both show of an import.
    func importSummary(_ view: ImportView, app: String) -> [String: Any] {
        let rows = view.rows
        let share = rows.total == 0 ? 1 : Double(rows.done) / Double(rows.total)
        return [
            "id": view.id,
            "label": view.name ?? "of " + Readable.time(view.createdAt),
            "href": importHref(view.id, app: app),
            "state": view.state.rawValue,
            "stateLabel": Self.stateLabel(view.state),
            "done": rows.done,
            "total": rows.total,
            "doneText": Readable.grouped(rows.done),
            "totalText": Readable.grouped(rows.total),
            "percent": Readable.percent(share),
            "imported": Readable.grouped(rows.imported),
            "alreadyKnown": Readable.grouped(rows.alreadyKnown),
            "refused": Readable.grouped(rows.refused),
            "failed": Readable.grouped(rows.failed),
            "pending": Readable.grouped(rows.pending),
            "started": Readable.time(view.createdAt),
        ]
    }

    func imports(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let section = try await self.section("/console/imports", request, context)
        guard let app = section.app else { return section.noApp }
        let list: Page<ImportView>
        do {
            let page = try PageRequest(
                limit: "50",
                cursor: request.uri.queryParameters.get("cursor").map { String($0) }
            )
            list = try await server.imports.list(bundleId: app.bundleId, page: page)
        } catch {
            guard let error = TillHTTPError.refusal(error) else { throw error }
            return section.failure(error)
        }
        var page = section.common
        page["count"] = list.total == 1 ? "1 import" : "\(Readable.grouped(list.total)) imports"
        page["imports"] = list.items.map { importSummary($0, app: app.bundleId) }
        page["refresh"] = list.items.contains { $0.state == .running || $0.state == .receiving }
        if let next = list.nextCursor {
            page["nextPage"] = "/console/imports?" + Readable.query([("app", app.bundleId), ("cursor", next)])
        }
        return ConsolePage.html("imports", page)
    }

    func importPage(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let section = try await self.section("/console/imports", request, context)
        guard let app = section.app else { return section.noApp }
        let query = request.uri.queryParameters
        let id = try context.pathParameter("import")
        let view: ImportView
        let rows: Page<ImportRowView>
        let outcome = query.get("outcome").map { String($0) }
        do {
            let page = try PageRequest(limit: "50", cursor: query.get("cursor").map { String($0) })
            view = try await server.imports.view(id: id, bundleId: app.bundleId)
            rows = try await server.imports.rows(bundleId: app.bundleId, id: id, outcome: outcome, page: page)
        } catch {
            guard let error = TillHTTPError.refusal(error) else { throw error }
            return section.failure(error)
        }
        var page = section.common
        page.merge(importSummary(view, app: app.bundleId)) { _, summary in summary }
        let href = importHref(id, app: app.bundleId)
        page["base"] = "/console/imports/\(Readable.percentEncoded(id))"
        page["sha256"] = view.fileSha256
        if let finished = view.finishedAt { page["finished"] = Readable.time(finished) }
        let running = view.state == .running || view.state == .receiving
        page["refresh"] = running
        page["cancellable"] = running
        if view.rows.retrying > 0 { page["retrying"] = Readable.grouped(view.rows.retrying) }
        if let lastError = view.lastError { page["lastError"] = lastError }
        let transactions = view.transactions
        page["recorded"] = Readable.grouped(transactions.recorded)
        page["updated"] = Readable.grouped(transactions.updated)
        page["revoked"] = Readable.grouped(transactions.revoked)
        page["unchanged"] = Readable.grouped(transactions.unchanged)
        page["ownedByAnotherCustomer"] = Readable.grouped(transactions.ownedByAnotherCustomer)
        page["unverifiable"] = Readable.grouped(transactions.unverifiable)
        if !view.refusedBy.isEmpty {
            page["refusedBy"] = view.refusedBy.map { "\($0.reason.rawValue) \(Readable.grouped($0.count))" }
                .joined(separator: ", ")
        }
        let counts: [ImportOutcome: Int] = [
            .failed: view.rows.failed, .refused: view.rows.refused, .pending: view.rows.pending,
            .imported: view.rows.imported, .alreadyKnown: view.rows.alreadyKnown,
        ]
        page["outcomes"] = Self.importOutcomes.map { item -> [String: Any] in
            [
                "label": item.label,
                "href": href + (item.outcome.map { "&outcome=" + $0.rawValue } ?? ""),
                "count": Readable.grouped(item.outcome.map { counts[$0] ?? 0 } ?? view.rows.total),
                "current": item.outcome?.rawValue == outcome,
            ]
        }
        page["outcomeLabel"] = Self.importOutcomes.first { $0.outcome?.rawValue == outcome }?.label ?? "All"
        page["rowsTotal"] = Readable.grouped(rows.total)
        page["rows"] = rows.items.map { row -> [String: Any] in
            var item: [String: Any] = [
                "row": row.row,
                "customerId": row.customerId ?? "—",
                "kind": Self.kindLabel(row.kind),
                "outcome": row.outcome.rawValue,
                "environment": row.environment ?? "—",
                "transactions":
                    "\(row.recorded) recorded, \(row.updated) updated, \(row.revoked) revoked, "
                    + "\(row.unchanged) known, \(row.ownedByAnotherCustomer) another's",
            ]
            if let customer = row.customerId, row.outcome == .imported || row.outcome == .alreadyKnown {
                item["customerHref"] = customerHref(customer, app: app.bundleId)
            }
            if let reason = row.reason { item["reason"] = reason.rawValue }
            if let detail = row.detail { item["detail"] = detail }
            if row.attempts > 0 { item["attempts"] = row.attempts }
            if let original = row.originalTransactionId { item["originalTransactionId"] = original }
            return item
        }
        if let next = rows.nextCursor {
            page["nextPage"] = href + "&" + Readable.query([("outcome", outcome), ("cursor", next)])
        }
        return ConsolePage.html("import", page)
    }

    func cancelImport(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let bundleId = try await actionApp(request, context).bundleId
        let id = try context.pathParameter("import")
        return try await act(
            .cancelImport,
            context,
            bundleId: bundleId,
            target: id,
            back: importHref(id, app: bundleId),
            done: "Import \(id) is cancelled: its pending rows will not be read."
        ) {
            _ = try await server.imports.cancel(bundleId: bundleId, id: id)
        }
    }
}
