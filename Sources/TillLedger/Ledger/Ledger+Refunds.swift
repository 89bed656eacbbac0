import Foundation
import SQLKit
import TillContract
import TillCore
import TillFormats
import TillStorage

/// What Apple's signed word in a notification does to the ledger: a transaction only a notification carried, a
/// refund, its reversal, an extension, an upgrade.
extension Ledger {
    /// What a notification says about a transaction of `owner`'s.
    package struct NotifiedChange: Sendable {
        /// Apple revoked it through Family Sharing (`REVOKE`), not by a refund.
        package var isFamilyRevocation = false
        /// Apple reversed the refund it had reported (`REFUND_REVERSED`).
        package var reversesRefund = false
        /// The transaction starts an upgrade, which ends the periods still running (`DID_CHANGE_RENEWAL_PREF` or
        /// `OFFER_REDEEMED` with the subtype `UPGRADE`).
        package var startsUpgrade = false

        package init(isFamilyRevocation: Bool = false, reversesRefund: Bool = false, startsUpgrade: Bool = false) {
            self.isFamilyRevocation = isFamilyRevocation
            self.reversesRefund = reversesRefund
            self.startsUpgrade = startsUpgrade
        }
    }

    /// Applies a transaction Apple signed in a notification: a known row is confirmed (lifting a rejection's
    /// revocation) and takes the new expiry; an unknown one is posted for its owner, confirmed. Then a revocation
    /// is booked as a refund (prorated as Apple says), a reversed refund gives back, an upgrade ends what it
    /// replaces.
    ///
    /// - Parameter origin: what carried it (a notification, the catch-up's Transaction History), kept as the origin
    ///   of a transaction it posts.
    package func applyNotified(
        _ transaction: PurchaseTransaction,
        signed: JWSTransactionDecodedPayload,
        owner: String,
        change: NotifiedChange,
        origin: Origin,
        app: ServerApp,
        catalogue: [String: CatalogProduct],
        now: Int64,
        in changes: ChangeSet
    ) async throws {
        let product = catalogue[transaction.productId]
        var row: LedgerRecord
        if let existing = try await purchaseStore.transaction(
            environment: transaction.environment,
            transactionId: transaction.transactionId,
            on: changes.db
        ) {
            row = existing
            row.expiresDate = transaction.expiresDate?.millisecondsSince1970 ?? row.expiresDate
            row.isUpgraded = row.isUpgraded || transaction.isUpgraded
            row.introductoryOffer = row.introductoryOffer || transaction.isIntroductoryOffer
            row.takeBillingPlan(of: transaction)
            // Apple signed it: confirmed, and a rejection's revocation of it is lifted.
            try await appleVouches(for: &row, catalogue: catalogue, now: now, in: changes)
            noteExtension(from: existing, to: row, product: product, at: now, in: changes)
        } else {
            row = try await post(
                transaction,
                to: owner,
                app: app,
                product: product,
                origin: origin,
                confirmed: true,
                carryingRevocation: false,
                now: now,
                in: changes
            )
        }
        if let revoked = transaction.revocationDate, row.revocationDate == nil {
            row.revocationDate = revoked.millisecondsSince1970
            row.revocationReason =
                transaction.isUpgraded ? .upgraded : (change.isFamilyRevocation ? .familyRevoked : .refund)
            switch row.revocationReason {
            case .refund:
                try await bookRefund(of: row, signed: signed, catalogue: catalogue, in: changes)
            case .familyRevoked:
                changes.record(
                    PendingEvent(.access_revoked, about: row, product: product, occurredAt: row.revocationDate ?? now)
                )
            default:
                break  // an upgrade: `subscription.productChanged` tells it, from the renewal state
            }
        } else if change.reversesRefund, transaction.revocationDate == nil, row.revocationReason == .refund {
            row.revocationDate = nil
            row.revocationReason = nil
            try await reverseRefund(of: row, catalogue: catalogue, now: now, in: changes)
        }
        row.updatedAt = now
        try await writes.update(row, in: changes)
        if change.startsUpgrade {
            try await markUpgraded(before: row, now: now, in: changes)
        }
    }

    /// A refund: the money booked for the purchase (or its price) counts negative, prorated when Apple refunded
    /// part of it; a consumable's credits are taken back.
    private func bookRefund(
        of row: LedgerRecord,
        signed: JWSTransactionDecodedPayload,
        catalogue: [String: CatalogProduct],
        in changes: ChangeSet
    ) async throws {
        let booked = try await purchaseStore.financeEntry(
            environment: row.environment,
            transactionId: row.transactionId,
            kind: .purchase,
            on: changes.db
        )
        let amount = booked?.amount ?? row.price ?? 0
        let currency = booked?.currency ?? row.currency
        let share = Int64(signed.revocationPercentage ?? 100_000)
        var refunded: Components.Schemas.Money?
        if amount > 0, let currency, row.ownership == .purchased {
            let money = -(amount * share / 100_000)
            try await writes.recordFinance(
                of: row,
                amount: money,
                currency: currency,
                at: row.revocationDate ?? clock.milliseconds,
                kind: .refund,
                in: changes
            )
            if row.environment.isRevenue { refunded = Components.Schemas.Money(amount: money, currency: currency) }
        }
        var event = try await creditEvent(
            .purchase_refunded,
            of: row,
            product: catalogue[row.productId],
            sign: -1,
            reference: "refund",
            at: clock.milliseconds,
            occurredAt: row.revocationDate ?? clock.milliseconds,
            in: changes
        )
        event.refund = Components.Schemas.EventRefund(share: Int(share), amount: refunded)
        changes.record(event)
    }

    /// REFUND_REVERSED: the refund's money and credits come back.
    private func reverseRefund(
        of row: LedgerRecord,
        catalogue: [String: CatalogProduct],
        now: Int64,
        in changes: ChangeSet
    ) async throws {
        let money = try await reverseFinance(of: row, kind: .refund, as: .refundReversed, at: now, in: changes)
        var event = try await creditEvent(
            .purchase_refundReversed,
            of: row,
            product: catalogue[row.productId],
            sign: 1,
            reference: "refundReversed",
            at: now,
            occurredAt: now,
            in: changes
        )
        if row.environment.isRevenue { event.price = money }
        changes.record(event)
    }

    /// An upgrade starts at once: the periods of the subscription still running when it began are upgraded away.
    private func markUpgraded(before upgrade: LedgerRecord, now: Int64, in changes: ChangeSet) async throws {
        for var row in try await purchaseStore.transactions(
            environment: upgrade.environment,
            originalTransactionId: upgrade.originalTransactionId,
            on: changes.db
        )
        where row.transactionId != upgrade.transactionId && row.purchaseDate <= upgrade.purchaseDate
            && (row.expiresDate ?? 0) > upgrade.purchaseDate && !row.isUpgraded
        {
            row.isUpgraded = true
            if row.revocationDate == nil {
                row.revocationDate = upgrade.purchaseDate
                row.revocationReason = .upgraded
            }
            row.updatedAt = now
            try await writes.update(row, in: changes)
        }
    }
}
