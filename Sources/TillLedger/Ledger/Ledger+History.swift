import Foundation
import SQLKit
import TillCore
import TillFormats
import TillStorage

/// Who owns a purchase Apple tells of, and what a transaction read from Apple's Transaction History does to the
/// ledger: the same as the transaction carried by a notification (`applyNotified`), since both are Apple's signed
/// word.
extension Ledger {
    /// What a transaction from Apple's history did to the ledger.
    package enum HistoryEffect: Sendable {
        /// New to the ledger (a renewal the app never sent): posted for the owner, confirmed.
        case recorded
        /// A refund or revocation applied now.
        case revoked
        /// Known, and changed otherwise: confirmed by Apple (a rejection's revocation lifted), a new expiry, upgraded.
        case updated
        /// Known, and nothing new.
        case unchanged
    }

    /// Who a transaction Apple tells of belongs to: the customer of its ledger row, else of the newest row of its
    /// original transaction (a renewal belongs to whoever owns the subscription). Nil when no one does yet: no
    /// customer is ever invented. The rows are read without holding them and the owner is held (`CustomerStore.owner`):
    /// what changes them next reads them again, held, after the customer, in a link's order.
    package func owner(of transaction: PurchaseTransaction, bundleId: String, on db: any SQLDatabase) async throws
        -> String?
    {
        if let row = try await purchaseStore.transaction(
            environment: transaction.environment,
            transactionId: transaction.transactionId,
            locking: false,
            on: db
        ), row.bundleId == bundleId {
            return try await customerStore.owner(bundleId: bundleId, customerId: row.customerId, on: db)
        }
        return try await owner(
            originalTransactionId: transaction.originalTransactionId,
            environment: transaction.environment,
            bundleId: bundleId,
            on: db
        )
    }

    /// Who owns a subscription (or a one-off purchase): the customer of the newest row of its original transaction;
    /// nil when no one does yet.
    package func owner(
        originalTransactionId: String,
        environment: AppStoreEnvironment,
        bundleId: String,
        on db: any SQLDatabase
    ) async throws -> String? {
        let rows = try await purchaseStore.transactions(
            environment: environment,
            originalTransactionId: originalTransactionId,
            locking: false,
            on: db
        ).filter { $0.bundleId == bundleId }
        guard let newest = rows.last else { return nil }
        return try await customerStore.owner(bundleId: bundleId, customerId: newest.customerId, on: db)
    }

    /// Applies a transaction of the owner's read from Apple's Transaction History, as a notification carrying it
    /// would (`applyNotified`): new, it is posted confirmed; known, Apple vouches for it and its expiry moves; a
    /// revocation is booked once (a refund with its money, a family revocation without). A known row the data
    /// would not change is left as it is, unwritten.
    ///
    /// A refund reversal is not read from history: only `REFUND_REVERSED` gives back, so that history read before a
    /// reversal cannot undo it, nor redo the refund (the caller skips data older than an applied notification).
    package func applyHistory(
        _ transaction: PurchaseTransaction,
        signed: JWSTransactionDecodedPayload,
        owner: String,
        app: ServerApp,
        catalogue: [String: CatalogProduct],
        now: Int64,
        in changes: ChangeSet
    ) async throws -> HistoryEffect {
        let before = try await purchaseStore.transaction(
            environment: transaction.environment,
            transactionId: transaction.transactionId,
            on: changes.db
        )
        if let before, !Self.changes(before, transaction) { return .unchanged }
        try await applyNotified(
            transaction,
            signed: signed,
            owner: owner,
            change: NotifiedChange(isFamilyRevocation: transaction.ownership == .familyShared),
            origin: .transactionHistory,
            app: app,
            catalogue: catalogue,
            now: now,
            in: changes
        )
        guard let before else { return .recorded }
        return before.revocationDate == nil && transaction.revocationDate != nil ? .revoked : .updated
    }

    /// Whether Apple's signed data says something the ledger row does not: a first confirmation, the lifting of a
    /// rejection's revocation, a revocation, another expiry, an introductory offer, a billing plan, an upgrade.
    private static func changes(_ row: LedgerRecord, _ transaction: PurchaseTransaction) -> Bool {
        if !row.confirmed || row.isRevokedByRejection { return true }
        if transaction.revocationDate != nil && row.revocationDate == nil { return true }
        if let expires = transaction.expiresDate?.millisecondsSince1970, expires != row.expiresDate { return true }
        if transaction.isIntroductoryOffer && !row.introductoryOffer { return true }
        if transaction.billingPlanType != nil && row.billingPlanType == nil { return true }
        return transaction.isUpgraded && !row.isUpgraded
    }
}
