import Foundation
import SQLKit
import TillContract
import TillLedger
import TillStorage

/// The imports of apps' existing customers (`Imports`): each import, its rows and their outcomes (migration
/// 026-imports).
struct ImportStore: ServerSQLStore {
    let database: TillDatabase

    // MARK: Imports

    func insert(_ record: ImportRecord, on db: any SQLDatabase) async throws {
        try await db.run(RecordStatements.insert(into: "srv_imports", record, with: Self.encoding))
    }

    /// One import; `locking`: held until the end of `db`'s transaction (PostgreSQL's `FOR UPDATE`; SQLite has one
    /// writer already).
    func record(id: String, locking: Bool = false, on db: any SQLDatabase) async throws -> ImportRecord? {
        let lock: SQLQueryString = locking && database.engine == .postgres ? " FOR UPDATE" : ""
        return try await db.raw("SELECT * FROM srv_imports WHERE id = \(bind: id)\(lock)")
            .first(decoding: ImportRecord.self, with: Self.decoding)
    }

    /// The import of this file that is being received or read, if there is one.
    func active(bundleId: String, fileSha256: String, on db: any SQLDatabase) async throws -> ImportRecord? {
        try await db.raw(
            """
            SELECT * FROM srv_imports
            WHERE bundle_id = \(bind: bundleId) AND file_sha256 = \(bind: fileSha256)
              AND state IN ('receiving', 'running')
            """
        ).first(decoding: ImportRecord.self, with: Self.decoding)
    }

    /// The app's imports, newest first.
    func records(bundleId: String, on db: any SQLDatabase) async throws -> [ImportRecord] {
        try await db.raw(
            "SELECT * FROM srv_imports WHERE bundle_id = \(bind: bundleId) ORDER BY created_at DESC, id DESC"
        ).all(decoding: ImportRecord.self, with: Self.decoding)
    }

    func update(
        id: String,
        state: ImportState,
        rowsTotal: Int? = nil,
        lastError: String?,
        now: Int64,
        on db: any SQLDatabase
    ) async throws {
        let finished = state == .finished || state == .cancelled ? now : nil
        try await db.raw(
            """
            UPDATE srv_imports SET state = \(bind: state.rawValue), last_error = \(bind: lastError),
                rows_total = COALESCE(\(bind: rowsTotal), rows_total), updated_at = \(bind: now),
                finished_at = \(bind: finished)
            WHERE id = \(bind: id)
            """
        ).run()
    }

    /// An import whose file was never wholly received (a stop while it was sent), with its rows.
    func delete(id: String, on db: any SQLDatabase) async throws {
        try await db.raw("DELETE FROM srv_import_rows WHERE import_id = \(bind: id)").run()
        try await db.raw("DELETE FROM srv_imports WHERE id = \(bind: id)").run()
    }

    // MARK: Rows

    func insert(_ rows: [ImportRowRecord], on db: any SQLDatabase) async throws {
        guard !rows.isEmpty else { return }
        try await db.run(
            RecordStatements.insert(into: "srv_import_rows", columns: ImportRowRecord.columns, rows: rows.map(\.values))
        )
    }

    /// The pending rows due by `now`, in the file's order, at most `limit`.
    func dueRows(importId: String, now: Int64, limit: Int, on db: any SQLDatabase) async throws -> [ImportRowRecord] {
        try await db.raw(
            """
            SELECT * FROM srv_import_rows
            WHERE import_id = \(bind: importId) AND outcome = 'pending' AND next_attempt_at <= \(bind: now)
            ORDER BY row_number LIMIT \(literal: limit)
            """
        ).all(decoding: ImportRowRecord.self, with: Self.decoding)
    }

    /// When the next pending row is due; nil when none is left.
    func nextDue(importId: String, on db: any SQLDatabase) async throws -> Int64? {
        try await db.raw(
            """
            SELECT MIN(next_attempt_at) AS due FROM srv_import_rows
            WHERE import_id = \(bind: importId) AND outcome = 'pending'
            """
        ).first()?.decode(column: "due", as: Int64?.self)
    }

    /// A row's outcome, progress and counts as they are now.
    func update(_ row: ImportRowRecord, on db: any SQLDatabase) async throws {
        try await db.run(
            RecordStatements.update(
                "srv_import_rows",
                columns: ImportRowRecord.columns,
                values: row.values,
                keys: ["import_id", "row_number"]
            )
        )
    }

    /// Rows of an import after `row`, in the file's order, of one outcome or all, at most `limit`.
    func rows(
        importId: String,
        outcome: ImportRowOutcome?,
        after row: Int,
        limit: Int,
        on db: any SQLDatabase
    ) async throws -> [ImportRowRecord] {
        let only: SQLQueryString = outcome.map { " AND outcome = \(bind: $0.rawValue)" } ?? ""
        return try await db.raw(
            """
            SELECT * FROM srv_import_rows WHERE import_id = \(bind: importId)\(only) AND row_number > \(bind: row)
            ORDER BY row_number LIMIT \(literal: limit)
            """
        ).all(decoding: ImportRowRecord.self, with: Self.decoding)
    }

    /// How many rows of an import have `outcome` (all rows for nil).
    func count(importId: String, outcome: ImportRowOutcome?, on db: any SQLDatabase) async throws -> Int {
        let only: SQLQueryString = outcome.map { " AND outcome = \(bind: $0.rawValue)" } ?? ""
        return try await db.raw(
            "SELECT COUNT(*) AS n FROM srv_import_rows WHERE import_id = \(bind: importId)\(only)"
        ).first()?.decode(column: "n", as: Int.self) ?? 0
    }

    /// The import's rows counted by outcome and reason, and their transactions summed: one grouped read.
    func tally(importId: String, on db: any SQLDatabase) async throws -> ImportTally {
        let rows = try await db.raw(
            """
            SELECT outcome, reason, CASE WHEN attempts > 0 THEN 1 ELSE 0 END AS retried, COUNT(*) AS n,
                SUM(recorded) AS recorded, SUM(updated) AS updated, SUM(revoked) AS revoked,
                SUM(unchanged) AS unchanged, SUM(conflicts) AS conflicts, SUM(unverifiable) AS unverifiable
            FROM srv_import_rows WHERE import_id = \(bind: importId)
            GROUP BY outcome, reason, CASE WHEN attempts > 0 THEN 1 ELSE 0 END
            """
        ).all()
        var tally = ImportTally()
        for row in rows {
            let outcome = try row.enumeration("outcome", as: ImportRowOutcome.self)
            let count = try row.decode(column: "n", as: Int.self)
            let sum = { (column: String) in Int(try row.decode(column: column, as: Int64?.self) ?? 0) }
            tally.outcomes[outcome, default: 0] += count
            if outcome == .pending, try row.decode(column: "retried", as: Int.self) == 1 { tally.retrying += count }
            if outcome == .refused || outcome == .failed,
                let reason = try row.optional("reason", as: String.self).flatMap(ImportRowReason.init(rawValue:))
            {
                tally.refusedBy[reason, default: 0] += count
            }
            tally.transactions.recorded += try sum("recorded")
            tally.transactions.updated += try sum("updated")
            tally.transactions.revoked += try sum("revoked")
            tally.transactions.unchanged += try sum("unchanged")
            tally.transactions.ownedByAnotherCustomer += try sum("conflicts")
            tally.transactions.unverifiable += try sum("unverifiable")
        }
        return tally
    }
}
