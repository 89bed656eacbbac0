import Foundation
import Hummingbird
import HummingbirdTesting
import SQLKit
import Testing
import TillBench
import TillContract
import TillCore
import TillStorage
import TillTestSupport

@testable import TillServer

/// Every statement each console page runs reads through an index: the database's own plan of it (`EXPLAIN QUERY PLAN`
/// on SQLite, `EXPLAIN` on PostgreSQL with sequential scans turned off, so that a plan without a usable index shows
/// one) never scans a big table, and never reads all of an app's (or an environment's) rows of one to find a few.
/// The ledger is `till bench ledger`'s, small: a plan is the same for three thousand rows as for a million (SQLite
/// keeps no statistics here; on PostgreSQL an index must be usable, whatever the planner would choose).
@Suite(.sharingTheMachine)
struct ConsoleQueryPlanTests {
    /// Tables that grow with the business: none may be scanned.
    static let bigTables: Set<String> = [
        "srv_transactions", "srv_finance", "srv_events", "srv_submissions", "srv_submission_attempts",
        "srv_notifications", "srv_customers", "srv_balance_entries", "srv_figures_daily", "srv_figures_subscriptions",
        "srv_customer_activity", "srv_console_actions", "srv_subscription_states",
        "srv_submission_payloads", "srv_webhook_deliveries", "srv_webhook_attempts",
    ]

    // Not among them: srv_consumption_requests grows with Apple's consumption requests (one per refund asked of
    // Apple), not with purchases, and the health page's count of those due reads an app's requests.

    /// The submissions' states that hold only what waits for Apple: the queue page counts each, and an index range
    /// on one of them is exactly the rows counted (confirmed and rejected submissions, the bulk, are never read).
    static let waitingStates: Set<String> = ["pending", "retrying", "deadLettered"]

    /// Columns that pick out a few rows: a statement that names one must be narrowed by it.
    static let selectiveColumns = ["customer_id", "transaction_id", "original_transaction_id", "submission_id"]

    /// Columns with a handful of values: an index range on them alone is most of the table.
    static let coarseColumns: Set<String> = [
        "bundle_id", "environment", "state", "kind", "measure", "outcome", "type", "source", "currency",
    ]

    @Test(arguments: TestDatabase.all) func everyConsolePageReadsThroughIndexes(_ engine: TestDatabase) async throws {
        let configuration = try await engine.fresh(prefix: "till_plans")
        let content = FileManager.default.temporaryDirectory.appendingPathComponent("till-plans-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: content) }
        let server = try await PurchaseServer.open(
            ServerConfiguration(database: configuration, operatorToken: "operator", contentDirectory: content)
        )
        do {
            _ = try await LedgerGenerator(.init(transactions: 3000, customers: 300, days: 400)).write(into: server)
            let sql = server.database.sql
            func text(_ query: String, _ column: String) async throws -> String {
                try #require(try await sql.raw(SQLQueryString(query)).first()).decode(column: column, as: String.self)
            }
            let renewal = try await text(
                "SELECT transaction_id FROM srv_transactions WHERE transaction_id <> original_transaction_id LIMIT 1",
                "transaction_id"
            )
            let original = try await text(
                "SELECT original_transaction_id FROM srv_transactions WHERE transaction_id <> original_transaction_id LIMIT 1",
                "original_transaction_id"
            )
            let notification = try await text("SELECT notification_uuid FROM srv_notifications LIMIT 1", "notification_uuid")
            // The generator's events are the event log's rows (`LedgerBulkLoad`): each body is the contract's Event.
            let body = try await text("SELECT body FROM srv_events ORDER BY sequence LIMIT 1", "body")
            let event = try JSONDecoder().decode(Components.Schemas.Event.self, from: Data(body.utf8))
            #expect(event.bundleId == LedgerGenerator.bundleId && event.sequence == 1, "\(body)")
            // A customer with a guest: its pages read the account and the guest together.
            let guest = try await text("SELECT customer_id FROM srv_customers WHERE alias_of IS NOT NULL LIMIT 1", "customer_id")
            let account = try await text(
                "SELECT alias_of FROM srv_customers WHERE customer_id = '\(guest)'", "alias_of"
            )
            let app = "app=" + LedgerGenerator.bundleId
            let pages = [
                "/console/overview?\(app)", "/console/overview?\(app)&from=2025-01-01&to=2026-12-31&bucket=month",
                "/console/overview?\(app)&environment=Sandbox&bucket=week",
                "/console/overview.csv?\(app)", "/console/customers?\(app)&q=customer-00001",
                "/console/customers?\(app)&q=\(renewal)", "/console/customers?\(app)&q=\(original)",
                "/console/customers?\(app)&q=\(guest)", "/console/customers/\(account)?\(app)",
                "/console/customers/\(guest)?\(app)", "/console/queue?state=deadLettered",
                "/console/queue?state=retrying", "/console/queue?state=pending", "/console/health?\(app)",
                "/console/notifications?\(app)", "/console/notifications?\(app)&outcome=applied",
                "/console/notifications?\(app)&type=REFUND", "/console/notifications/\(notification)?\(app)",
                "/console/catalogue?\(app)", "/console/catalogue/premium.monthly?\(app)", "/console/apps",
                "/console/apps/\(LedgerGenerator.bundleId)", "/console/activity",
            ]
            let (explained, offenders) = try await Application(router: buildServerRouter(server)).test(.router) {
                client in
                var offenders: [String] = []
                var explained = 0
                let browser = ConsoleClient(client)
                #expect(try await browser.signIn().status == 303)
                for page in pages {
                    let (answer, statements) = try await server.database.statements.recording {
                        try await browser.get(page)
                    }
                    #expect([200, 303].contains(answer.status), "\(page) answered \(answer.status)")
                    #expect(!statements.isEmpty, "\(page) ran no statement")
                    // Reads: a page's writes (its session's idle time, the journal's fold) are by key or small.
                    let reads = statements.filter {
                        let head = $0.sql.trimmingCharacters(in: .whitespacesAndNewlines).prefix(6).uppercased()
                        return head.hasPrefix("SELECT") || head.hasPrefix("WITH")
                    }
                    for statement in reads {
                        explained += 1
                        let plan = try await Self.plan(statement, on: server.database)
                        if let problem = Self.problem(in: plan, of: statement, engine: server.database.engine) {
                            offenders.append("\(page): \(problem)\n    \(statement.sql)\n    \(plan.joined(separator: " | "))")
                        }
                    }
                }
                return (explained, offenders)
            }
            #expect(explained > 50, "only \(explained) statements explained")
            #expect(offenders.isEmpty, "\(offenders.count) statements read without an index:\n\(offenders.joined(separator: "\n"))")
        } catch {
            try? await server.shutdown()
            Issue.record("\(String(reflecting: error))")
            throw error
        }
        try await server.shutdown()
    }

    /// The engine's plan of a statement, one line per step.
    static func plan(_ statement: StatementTap.Statement, on database: TillDatabase) async throws -> [String] {
        switch database.engine {
        case .sqlite:
            return try await database.sql.execute(RecordedStatement(prefix: "EXPLAIN QUERY PLAN ", statement)) {
                try $0.decode(column: "detail", as: String.self)
            }
        case .postgres:
            return try await database.sql.withSession { session in
                try await session.raw("SET enable_seqscan = off").run()
                defer { _ = session }
                let lines = try await session.execute(RecordedStatement(prefix: "EXPLAIN ", statement)) {
                    try $0.decode(column: "QUERY PLAN", as: String.self)
                }
                try await session.raw("RESET enable_seqscan").run()
                return lines
            }
        }
    }

    /// Why a plan is not acceptable, or nil.
    static func problem(in plan: [String], of statement: StatementTap.Statement, engine: TillDatabase.Engine)
        -> String?
    {
        let sql = statement.sql
        switch engine {
        case .sqlite:
            let sorts = plan.contains { $0.hasPrefix("USE TEMP B-TREE FOR ORDER BY") }
            let limited = sql.uppercased().contains(" LIMIT ")
            for line in plan {
                let words = line.split(separator: " ")
                guard words.count >= 2, ["SCAN", "SEARCH"].contains(words[0]), bigTables.contains(String(words[1])) else {
                    continue
                }
                if words[0] == "SCAN" {
                    // An index walked in its order to the LIMIT (the newest rows first) reads only the rows shown.
                    if line.contains(" USING ") && line.contains("INDEX") && limited && !sorts { continue }
                    return "scans \(words[1])"
                }
                // `SEARCH t USING INDEX i (bundle_id=? AND state=?)`: the columns the index narrows by.
                guard let open = line.lastIndex(of: "("), line.hasSuffix(")") else { continue }
                let columns = line[line.index(after: open)..<line.index(before: line.endIndex)]
                    .components(separatedBy: " AND ").map { $0.prefix { $0 != "=" && $0 != ">" && $0 != "<" } }
                let binds = statement.binds.compactMap { $0 as? String }
                if words[1] == "srv_submissions", columns == ["state"], !binds.isEmpty,
                    binds.allSatisfy(waitingStates.contains)
                {
                    continue
                }
                if columns.allSatisfy({ coarseColumns.contains(String($0)) }) {
                    if !limited || sorts { return "reads all of \(words[1]) for \(columns.joined(separator: ", "))" }
                    // An index walked in its order to the LIMIT reads only the rows shown, unless the statement
                    // looks for rows of one customer or transaction the index does not narrow to: it then walks
                    // all of the app's rows to find a few (a customer and its guest in one `IN` did: 1.7 s on a
                    // million events).
                    let condition = sql.range(of: "WHERE", options: .caseInsensitive).map { sql[$0.upperBound...] } ?? ""
                    if let selective = selectiveColumns.first(where: { condition.contains($0) }) {
                        return "walks all of \(words[1]) for \(columns.joined(separator: ", ")) to find rows of one \(selective)"
                    }
                }
            }
            return nil
        case .postgres:
            for line in plan {
                guard let range = line.range(of: "Seq Scan on ") else { continue }
                let table = line[range.upperBound...].prefix { $0 != " " }
                if bigTables.contains(String(table)) { return "scans \(table)" }
            }
            return nil
        }
    }
}

/// A statement heard by the tap, run again behind a prefix (`EXPLAIN …`) with its binds.
struct RecordedStatement: SQLExpression {
    let prefix: String
    let statement: StatementTap.Statement

    init(prefix: String, _ statement: StatementTap.Statement) {
        self.prefix = prefix
        self.statement = statement
    }

    func serialize(to serializer: inout SQLSerializer) {
        serializer.write(prefix + statement.sql)
        serializer.binds.append(contentsOf: statement.binds)
    }
}

extension SQLDatabase {
    /// Runs an expression and maps each row.
    func execute<T: Sendable>(_ expression: some SQLExpression, _ map: @escaping @Sendable (any SQLRow) throws -> T)
        async throws -> [T]
    {
        let rows = LockedRows<T>()
        var failure: (any Error)?
        try await execute(sql: expression) { row in
            do { rows.append(try map(row)) } catch { rows.fail(error) }
        }
        failure = rows.failure
        if let failure { throw failure }
        return rows.values
    }
}

/// Rows gathered from sql-kit's row callback.
final class LockedRows<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var gathered: [T] = []
    private var error: (any Error)?

    func append(_ value: T) { lock.withLock { gathered.append(value) } }
    func fail(_ error: any Error) { lock.withLock { self.error = error } }
    var values: [T] { lock.withLock { gathered } }
    var failure: (any Error)? { lock.withLock { error } }
}
