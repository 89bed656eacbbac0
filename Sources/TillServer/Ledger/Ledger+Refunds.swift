import Foundation
import SQLKit
import TillCore
import TillFormats
import TillStorage

/// What Apple's signed word in a notification does to the ledger: a transaction only a notification carried, a
/// refund, its reversal, an upgrade.
extension Ledger {
    /// What a notification says about a transaction of `owner`'s.
    struct NotifiedChange: Sendable {
        /// Apple revoked it through Family Sharing (`REVOKE`), not by a refund.
        var isFamilyRevocation = false
        /// Apple reversed the refund it had reported (`REFUND_REVERSED`).
        var reversesRefund = false
        /// The transaction starts an upgrade, which ends the periods still running (`DID_CHANGE_RENEWAL_PREF` or
        /// `OFFER_REDEEMED` with the subtype `UPGRADE`).
        var startsUpgrade = false
    }

    /// Applies a transaction Apple signed in a notification: a known row is confirmed (lifting a rejection's
    /// revocation) and takes the new expiry; an unknown one is posted for its owner, confirmed. Then a revocation
    /// is booked as a refund (prorated as Apple says), a reversed refund gives back, an upgrade ends what it
    /// replaces.
    ///
    /// - Parameter source: what carried it (`notification:<uuid>`, `transactionHistory`), kept as the source of a
    ///   transaction it posts.
    func applyNotified(
        _ transaction: PurchaseTransaction,
        signed: JWSTransactionDecodedPayload,
        owner: String,
        change: NotifiedChange,
        source: String,
        app: ServerApp,
        catalogue: [String: CatalogProduct],
        now: Int64,
        on db: any SQLDatabase
    ) async throws {
        var row: LedgerRecord
        if let existing = try await store.transaction(
            environment: transaction.environment.rawValue,
            transactionId: transaction.transactionId,
            on: db
        ) {
            row = existing
            row.expiresDate = transaction.expiresDate?.millisecondsSince1970 ?? row.expiresDate
            row.isUpgraded = row.isUpgraded || transaction.isUpgraded
            row.introductoryOffer = row.introductoryOffer || transaction.isIntroductoryOffer
            row.takeBillingPlan(of: transaction)
            // Apple signed it: confirmed, and a rejection's revocation of it is lifted.
            try await appleVouches(for: &row, catalogue: catalogue, now: now, on: db)
        } else {
            row = try await post(
                transaction,
                to: owner,
                app: app,
                product: catalogue[transaction.productId],
                source: source,
                confirmed: true,
                carryingRevocation: false,
                now: now,
                on: db
            )
        }
        if let revoked = transaction.revocationDate, row.revocationDate == nil {
            row.revocationDate = revoked.millisecondsSince1970
            row.revocationReason =
                transaction.isUpgraded ? "upgraded" : (change.isFamilyRevocation ? "familyRevoked" : "refund")
            if row.revocationReason == "refund" {
                try await bookRefund(of: row, signed: signed, catalogue: catalogue, on: db)
            }
        } else if change.reversesRefund, transaction.revocationDate == nil, row.revocationReason == "refund" {
            row.revocationDate = nil
            row.revocationReason = nil
            try await reverseRefund(of: row, catalogue: catalogue, now: now, on: db)
        }
        row.updatedAt = now
        try await store.update(row, on: db)
        if change.startsUpgrade {
            try await markUpgraded(before: row, now: now, on: db)
        }
    }

    /// A refund: the money booked for the purchase (or its price) counts negative, prorated when Apple refunded
    /// part of it; a consumable's credits are taken back.
    private func bookRefund(
        of row: LedgerRecord,
        signed: JWSTransactionDecodedPayload,
        catalogue: [String: CatalogProduct],
        on db: any SQLDatabase
    ) async throws {
        let booked = try await store.financeEntry(
            environment: row.environment,
            transactionId: row.transactionId,
            kind: "purchase",
            on: db
        )
        let amount = booked?.amount ?? row.price ?? 0
        let currency = booked?.currency ?? row.currency
        let share = Int64(signed.revocationPercentage ?? 100_000)
        if amount > 0, let currency, row.ownership == Ownership.purchased.rawValue {
            try await store.recordFinance(
                environment: row.environment,
                transactionId: row.transactionId,
                bundleId: row.bundleId,
                productId: row.productId,
                amount: -(amount * share / 100_000),
                currency: currency,
                at: row.revocationDate ?? clock.milliseconds,
                kind: "refund",
                on: db
            )
        }
        try await credit(
            row,
            product: catalogue[row.productId],
            sign: -1,
            reference: Self.reference("refund", of: row),
            at: clock.milliseconds,
            on: db
        )
    }

    /// REFUND_REVERSED: the refund's money and credits come back.
    private func reverseRefund(
        of row: LedgerRecord,
        catalogue: [String: CatalogProduct],
        now: Int64,
        on db: any SQLDatabase
    ) async throws {
        try await store.reverseFinance(of: row, kind: "refund", as: "refundReversed", at: now, on: db)
        try await credit(
            row,
            product: catalogue[row.productId],
            sign: 1,
            reference: Self.reference("refundReversed", of: row),
            at: now,
            on: db
        )
    }

    /// An upgrade starts at once: the periods of the subscription still running when it began are upgraded away.
    private func markUpgraded(before upgrade: LedgerRecord, now: Int64, on db: any SQLDatabase) async throws {
        for var row in try await store.transactions(
            environment: upgrade.environment,
            originalTransactionId: upgrade.originalTransactionId,
            on: db
        )
        where row.transactionId != upgrade.transactionId && row.purchaseDate <= upgrade.purchaseDate
            && (row.expiresDate ?? 0) > upgrade.purchaseDate && !row.isUpgraded
        {
            row.isUpgraded = true
            if row.revocationDate == nil {
                row.revocationDate = upgrade.purchaseDate
                row.revocationReason = "upgraded"
            }
            row.updatedAt = now
            try await store.update(row, on: db)
        }
    }
}
