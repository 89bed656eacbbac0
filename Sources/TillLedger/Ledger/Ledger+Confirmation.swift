import Foundation
import SQLKit
import TillContract
import TillCore
import TillStorage

/// What Apple's answer to a submission does to the ledger: a confirmation (in the environment Apple answered from),
/// or a rejection, which takes back what the local check granted, until Apple's later word gives it back.
///
/// A rejection (Apple refuses the purchase for good: 21003, 21010, an unknown transaction) revokes the
/// transactions of the submission that no confirmation vouches for: entitlements, a consumable's credits, and the
/// money in the books. The same facts must lead to the same state whatever order they arrive in, so when Apple
/// later vouches for such a transaction — another submission of it is confirmed, or a notification carries it
/// signed — the rejection's revocation is lifted and its credits and money come back. Refunds, upgrades, family
/// revocations and an operator's revocation are never lifted this way.
extension Ledger {
    /// Moves what a submission recorded to the environment Apple confirmed it in: an iOS 6-style receipt claims its
    /// environment without signing it, and Apple's answer decides.
    package func moveEnvironment(
        of submissionId: String,
        from: AppStoreEnvironment,
        to environment: AppStoreEnvironment,
        in changes: ChangeSet
    ) async throws {
        guard from != environment else { return }
        try await writes.moveEnvironment(submissionId: submissionId, from: from, to: environment, in: changes)
    }

    /// Apple confirmed a submission: it vouches for each of these transactions of the submission's customer (the
    /// account it stands for now: `ConfirmationQueue.settle` passes the submission with its customer resolved).
    package func confirm(
        _ submission: SubmissionRecord,
        transactionIds: Set<String>,
        catalogue: [String: CatalogProduct],
        in changes: ChangeSet
    ) async throws {
        let now = clock.milliseconds
        for id in transactionIds.sorted() {
            guard
                var row = try await purchaseStore.transaction(
                    environment: submission.environment,
                    transactionId: id,
                    on: changes.db
                ),
                row.customerId == submission.customerId, !row.confirmed || row.isRevokedByRejection
            else { continue }
            try await appleVouches(for: &row, catalogue: catalogue, now: now, in: changes)
            try await writes.update(row, in: changes)
        }
    }

    /// Takes back what a rejected submission granted: its transactions that no confirmation vouches for.
    ///
    /// - Parameters:
    ///   - status: Apple's answer (`status 21010`), kept as the revocation's detail.
    ///   - reason: what it means, in words.
    package func revokeUnconfirmed(
        of submission: SubmissionRecord,
        status: String,
        reason: String,
        catalogue: [String: CatalogProduct],
        in changes: ChangeSet
    ) async throws {
        let now = clock.milliseconds
        for var row in try await purchaseStore.transactions(submissionId: submission.id, on: changes.db)
        where !row.confirmed && row.revocationDate == nil {
            row.revocationDate = now
            row.revocationReason = .rejected
            row.revocationDetail = status
            row.updatedAt = now
            try await writes.update(row, in: changes)
            var event = try await creditEvent(
                .purchase_rejected,
                of: row,
                product: catalogue[row.productId],
                sign: -1,
                reference: "revoke",
                at: now,
                occurredAt: now,
                in: changes
            )
            // What the purchase booked is taken back, and nothing else: a purchase that booked nothing (no price,
            // shared by the family, handed out again) books no revocation, not a zero nor a negative one.
            _ = try await reverseFinance(of: row, kind: .purchase, as: .revocation, at: now, in: changes)
            event.rejection = Components.Schemas.EventRejection(
                status: status,
                reason: reason,
                submissionId: submission.id
            )
            changes.record(event)
        }
    }

    /// Apple vouches for a ledger row: it is confirmed, and what a rejection of it took comes back. The caller writes
    /// the row.
    package func appleVouches(
        for row: inout LedgerRecord,
        catalogue: [String: CatalogProduct],
        now: Int64,
        in changes: ChangeSet
    ) async throws {
        let wasConfirmed = row.confirmed && !row.isRevokedByRejection
        row.confirmed = true
        row.updatedAt = now
        var restored: [String: Int64] = [:]
        if row.isRevokedByRejection {
            row.revocationDate = nil
            row.revocationReason = nil
            row.revocationDetail = nil
            for entry in try await purchaseStore.balanceEntries(
                bundleId: row.bundleId,
                reference: Self.reference("revoke", of: row),
                on: changes.db
            ) {
                if try await writes.addBalanceEntry(
                    bundleId: row.bundleId,
                    customerId: row.customerId,
                    credit: entry.credit,
                    delta: -entry.delta,
                    reference: Self.reference("restore", of: row),
                    at: now,
                    on: changes.db
                ) {
                    restored[entry.credit, default: 0] -= entry.delta
                }
            }
            try await reverseFinance(of: row, kind: .revocation, as: .restoration, at: now, in: changes)
        }
        guard !wasConfirmed else { return }
        changes.record(
            PendingEvent(
                .purchase_confirmed,
                about: row,
                product: catalogue[row.productId],
                occurredAt: now,
                balanceChanges: restored
            )
        )
    }

    /// Books the opposite of `row`'s finance entry of `kind` as an entry of `reversal` (a refund reversed, a
    /// revocation lifted), once; nothing when there is no such entry or it is zero. Answers the amount booked.
    @discardableResult
    package func reverseFinance(
        of row: LedgerRecord,
        kind: FinanceKind,
        as reversal: FinanceKind,
        at: Int64,
        in changes: ChangeSet
    ) async throws -> Components.Schemas.Money? {
        guard
            let booked = try await purchaseStore.financeEntry(
                environment: row.environment,
                transactionId: row.transactionId,
                kind: kind,
                on: changes.db
            ), booked.amount != 0
        else { return nil }
        try await writes.recordFinance(
            of: row,
            amount: -booked.amount,
            currency: booked.currency,
            at: at,
            kind: reversal,
            in: changes
        )
        return Components.Schemas.Money(amount: -booked.amount, currency: booked.currency)
    }
}
