import Foundation
import SQLKit
import TillCore
import TillStorage

/// What a rejection by Apple takes from a customer, and what Apple's later word gives back.
///
/// A rejection (Apple refuses the purchase for good: 21003, 21010, an unknown transaction) revokes the
/// transactions of the submission that no confirmation vouches for: entitlements, a consumable's credits, and the
/// money in the books. The same facts must lead to the same state whatever order they arrive in, so when Apple
/// later vouches for such a transaction — another submission of it is confirmed, or a notification carries it
/// signed — the rejection's revocation is lifted and its credits and money come back. Refunds, upgrades and
/// family revocations are Apple's own word and are never lifted this way.
extension Ledger {
    /// Takes back what a rejected submission granted: its transactions that no confirmation vouches for.
    func revokeUnconfirmed(
        of submission: SubmissionRecord,
        because reason: String,
        catalogue: [String: CatalogProduct],
        on db: any SQLDatabase
    ) async throws {
        let now = clock.milliseconds
        for var row in try await store.transactions(submissionId: submission.id, on: db)
        where !row.confirmed && row.revocationDate == nil {
            row.revocationDate = now
            row.revocationReason = reason
            row.updatedAt = now
            try await store.update(row, on: db)
            try await credit(
                row,
                product: catalogue[row.productId],
                sign: -1,
                reference: Self.reference("revoke", of: row),
                at: now,
                on: db
            )
            try await store.recordFinance(
                environment: row.environment,
                transactionId: row.transactionId,
                bundleId: row.bundleId,
                productId: row.productId,
                amount: -(row.price ?? 0),
                currency: row.currency ?? "USD",
                at: now,
                kind: "revocation",
                on: db
            )
        }
        try await store.recordEvent(
            bundleId: submission.bundleId,
            kind: "rejected",
            detail: "submission \(submission.id): \(reason)",
            at: now,
            on: db
        )
    }

    /// Apple vouches for a ledger row: it is confirmed, and what a rejection of it took comes back.
    func appleVouches(
        for row: inout LedgerRecord,
        catalogue: [String: CatalogProduct],
        now: Int64,
        on db: any SQLDatabase
    ) async throws {
        row.confirmed = true
        row.updatedAt = now
        guard row.isRevokedByRejection else { return }
        let lifted = row.revocationReason ?? ""
        row.revocationDate = nil
        row.revocationReason = nil
        for entry in try await store.balanceEntries(
            bundleId: row.bundleId,
            reference: Self.reference("revoke", of: row),
            on: db
        ) {
            try await store.addBalanceEntry(
                bundleId: row.bundleId,
                customerId: row.customerId,
                credit: entry.credit,
                delta: -entry.delta,
                reference: Self.reference("restore", of: row),
                at: now,
                on: db
            )
        }
        try await store.reverseFinance(of: row, kind: "revocation", as: "restoration", at: now, on: db)
        try await store.recordEvent(
            bundleId: row.bundleId,
            kind: "restored",
            detail:
                "\(row.environment) transaction \(row.transactionId) of \(row.customerId): Apple vouches for it; lifted \(lifted)",
            at: now,
            on: db
        )
    }
}

extension LedgerRecord {
    /// How a rejection's revocation reason starts (`apple: status 21003`); others are Apple's own word.
    static let rejectionPrefix = "apple: "

    /// Revoked because Apple rejected a submission of it, not refunded, upgraded or revoked by Apple.
    var isRevokedByRejection: Bool {
        revocationDate != nil && (revocationReason?.hasPrefix(Self.rejectionPrefix) ?? false)
    }
}
