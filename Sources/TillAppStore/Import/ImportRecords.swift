import Foundation
import TillContract
import TillCore

/// Where an import stands (the contract's `ImportState`).
package typealias ImportState = Components.Schemas.ImportState
/// What became of one row of an import (the contract's `ImportRowOutcome`).
package typealias ImportRowOutcome = Components.Schemas.ImportRowOutcome
/// Why a row was refused, or failed (the contract's `ImportRowReason`).
package typealias ImportRowReason = Components.Schemas.ImportRowReason
/// What a row names its customer's purchases by (the contract's `ImportRowKind`).
package typealias ImportRowKind = Components.Schemas.ImportRowKind
/// An import as the admin API shows it.
public typealias ImportView = Components.Schemas.Import
/// A row of an import as the admin API shows it.
public typealias ImportRowView = Components.Schemas.ImportRow

/// A row of `srv_imports`.
struct ImportRecord: Codable, Sendable {
    var id: String
    var bundleId: String
    var name: String?
    var fileSha256: String
    var state: ImportState
    var rowsTotal: Int
    var lastError: String?
    var createdAt: Int64
    var updatedAt: Int64
    var finishedAt: Int64?
}

/// A row of `srv_import_rows`: one row of the file, its outcome, and where its customer's history stands.
struct ImportRowRecord: Codable, Sendable {
    var importId: String
    var rowNumber: Int
    var customerId: String?
    var kind: ImportRowKind?
    /// What the file gave (a transaction id, a receipt, a JWS), kept until the row has an outcome.
    var input: String
    var outcome: ImportRowOutcome
    var reason: ImportRowReason?
    var detail: String?
    /// The environment whose history is read, once known, and the id it is asked with.
    var environment: AppStoreEnvironment?
    var originalTransactionId: String?
    /// The last page read (Apple's revision): a row cut short resumes after it.
    var revision: String?
    var recorded: Int
    var updated: Int
    var revoked: Int
    var unchanged: Int
    var conflicts: Int
    var unverifiable: Int
    /// Attempts that found Apple unavailable.
    var attempts: Int
    var nextAttemptAt: Int64
    var updatedAt: Int64

    static let columns = [
        "import_id", "row_number", "customer_id", "kind", "input", "outcome", "reason", "detail", "environment",
        "original_transaction_id", "revision", "recorded", "updated", "revoked", "unchanged", "conflicts",
        "unverifiable", "attempts", "next_attempt_at", "updated_at",
    ]

    var values: [(any Encodable & Sendable)?] {
        [
            importId, rowNumber, customerId, kind?.rawValue, input, outcome.rawValue, reason?.rawValue, detail,
            environment, originalTransactionId, revision, recorded, updated, revoked, unchanged, conflicts,
            unverifiable, attempts, nextAttemptAt, updatedAt,
        ]
    }

    /// A new row of `importId` from the file: pending, or refused as it stands.
    init(_ row: ImportFileRow, importId: String, now: Int64) {
        self.importId = importId
        rowNumber = row.number
        customerId = row.customerId
        kind = row.kind
        input = row.refusal == nil ? row.input : ""
        outcome = row.refusal == nil ? .pending : .refused
        reason = row.refusal?.reason
        detail = row.refusal?.detail
        recorded = 0
        updated = 0
        revoked = 0
        unchanged = 0
        conflicts = 0
        unverifiable = 0
        attempts = 0
        nextAttemptAt = now
        updatedAt = now
    }

    var view: ImportRowView {
        ImportRowView(
            row: rowNumber,
            customerId: customerId,
            kind: kind,
            outcome: outcome,
            reason: reason,
            detail: detail,
            environment: environment?.rawValue,
            originalTransactionId: originalTransactionId,
            attempts: attempts,
            recorded: recorded,
            updated: updated,
            revoked: revoked,
            unchanged: unchanged,
            ownedByAnotherCustomer: conflicts
        )
    }
}

/// An import's rows counted: by outcome, by refusal, and the transactions their histories held.
struct ImportTally: Sendable {
    var outcomes: [ImportRowOutcome: Int] = [:]
    var retrying = 0
    var refusedBy: [ImportRowReason: Int] = [:]
    var transactions = Components.Schemas.ImportTransactionCounts(
        recorded: 0,
        updated: 0,
        revoked: 0,
        unchanged: 0,
        ownedByAnotherCustomer: 0,
        unverifiable: 0
    )
}

extension ImportView {
    init(_ record: ImportRecord, _ tally: ImportTally) {
        let count = { (outcome: ImportRowOutcome) in tally.outcomes[outcome] ?? 0 }
        // Rows with an outcome; the others are pending, stored or not yet (while the file is received).
        let done = [ImportRowOutcome.imported, .alreadyKnown, .refused, .failed].reduce(0) { $0 + count($1) }
        self.init(
            id: record.id,
            bundleId: record.bundleId,
            name: record.name,
            state: record.state,
            fileSha256: record.fileSha256,
            rows: .init(
                total: record.rowsTotal,
                done: done,
                imported: count(.imported),
                alreadyKnown: count(.alreadyKnown),
                refused: count(.refused),
                failed: count(.failed),
                pending: record.rowsTotal - done,
                retrying: tally.retrying
            ),
            transactions: tally.transactions,
            refusedBy: tally.refusedBy.sorted { ($0.value, $1.key.rawValue) > ($1.value, $0.key.rawValue) }.map {
                .init(reason: $0.key, count: $0.value)
            },
            lastError: record.lastError,
            createdAt: record.createdAt,
            updatedAt: record.updatedAt,
            finishedAt: record.finishedAt
        )
    }
}
