import Foundation
import Logging
import SQLKit
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

/// The ledger: the only code that posts transactions, credits and debits balances, revokes, refunds and books
/// money. Every other component tells it what happened (a submission verified, Apple's answer, a notification);
/// it decides what that does to the customer's purchases, balances and the company's books.
///
/// Each rule is written once here: a first sight of a transaction is `post`, whoever saw it; a consumable's credits
/// are moved by `credit`, whether bought, refunded, revoked or given back.
public struct Ledger: Sendable {
    let database: TillDatabase
    let store: ServerStore
    let clock: ServerClock

    /// What recording a submission's transactions did.
    struct Recording: Sendable {
        /// Transactions not credited because another customer owns them.
        var refused: [RefusedTransaction] = []
        /// Purchases (environment, original transaction id) recorded for the first time: notifications about
        /// them may have come first and be waiting.
        var firstRecorded: [PurchaseKey] = []
    }

    /// One purchase: an original transaction in an environment.
    struct PurchaseKey: Hashable, Sendable {
        var environment: String
        var originalTransactionId: String
    }

    /// Records the transactions a submission (or Apple's answer to it) carried, once each: new ones are posted,
    /// known ones take what the signed data says (revocation, upgrade, expiry). New rows are `confirmed` when nobody
    /// else will confirm them (StoreKit Testing in Xcode's).
    ///
    /// Ownership is decided per purchase (an original transaction in an environment), never per transaction, so that
    /// the same facts give the same owner whatever brings them first: a purchase another customer owns — any of its
    /// transactions, including one this submission is the first to show — is refused, or moved whole to the
    /// submitter when the app's restore policy is `transferToLatest` and `transfers` is set (a customer's own
    /// submission; Apple's later answer to an older submission must not move it back). A notification or the
    /// catch-up that brings a transaction first gives it to the purchase's owner (`owner(of:…)`), the same customer.
    func record(
        _ transactions: [PurchaseTransaction],
        submission: SubmissionRecord,
        app: ServerApp,
        catalogue: [String: CatalogProduct],
        confirmed: Bool = false,
        transfers: Bool = true,
        on db: any SQLDatabase
    ) async throws -> Recording {
        var recording = Recording()
        let now = clock.milliseconds
        for transaction in transactions {
            let environment = transaction.environment.rawValue
            let product = catalogue[transaction.productId]
            // One decision per purchase at a time: a notification about it waits for this one (PostgreSQL).
            try await store.lockPurchase(
                environment: environment,
                originalTransactionId: transaction.originalTransactionId,
                on: db
            )
            let existing = try await store.transaction(
                environment: environment,
                transactionId: transaction.transactionId,
                on: db
            )
            // Who owns the purchase now: the transaction's row, else the purchase's other transactions.
            var purchase = existing.map { [$0] } ?? []
            if purchase.isEmpty {
                purchase = try await store.transactions(
                    environment: environment,
                    originalTransactionId: transaction.originalTransactionId,
                    on: db
                ).filter { $0.bundleId == app.bundleId }
            }
            if let owner = purchase.last?.customerId, owner != submission.customerId {
                guard transfers, app.restorePolicy == .transferToLatest,
                    !(product?.type ?? transaction.productType ?? .consumable).isCreditedPerPurchase
                else {
                    recording.refused.append(
                        RefusedTransaction(transactionId: transaction.transactionId, reason: "ownedByAnotherCustomer")
                    )
                    try await store.recordEvent(
                        bundleId: app.bundleId,
                        kind: "replayRefused",
                        detail:
                            "\(environment) transaction \(transaction.transactionId) (purchase \(transaction.originalTransactionId)) of \(owner) submitted by \(submission.customerId)",
                        at: now,
                        on: db
                    )
                    continue
                }
                try await transfer(
                    environment: environment,
                    originalTransactionId: transaction.originalTransactionId,
                    app: app,
                    to: submission.customerId,
                    now: now,
                    on: db
                )
            }
            if var existing = try await store.transaction(
                environment: environment,
                transactionId: transaction.transactionId,
                on: db
            ) {
                if let revoked = transaction.revocationDate, existing.revocationDate == nil {
                    existing.revocationDate = revoked.millisecondsSince1970
                    existing.revocationReason = transaction.isUpgraded ? "upgraded" : "refund"
                }
                existing.isUpgraded = existing.isUpgraded || transaction.isUpgraded
                existing.introductoryOffer = existing.introductoryOffer || transaction.isIntroductoryOffer
                existing.expiresDate = transaction.expiresDate?.millisecondsSince1970 ?? existing.expiresDate
                existing.takeBillingPlan(of: transaction)
                existing.updatedAt = now
                try await store.update(existing, on: db)
                continue
            }
            let key = PurchaseKey(environment: environment, originalTransactionId: transaction.originalTransactionId)
            if !recording.firstRecorded.contains(key) { recording.firstRecorded.append(key) }
            try await post(
                transaction,
                to: submission.customerId,
                app: app,
                product: product,
                source: submission.id,
                confirmed: confirmed,
                carryingRevocation: true,
                now: now,
                on: db
            )
        }
        return recording
    }

    /// Moves every transaction of a purchase to `customerId` (the restore policy `transferToLatest`): a
    /// subscription's renewals and a non-consumable's repurchases go together, so the purchase has one owner.
    private func transfer(
        environment: String,
        originalTransactionId: String,
        app: ServerApp,
        to customerId: String,
        now: Int64,
        on db: any SQLDatabase
    ) async throws {
        for var row in try await store.transactions(
            environment: environment,
            originalTransactionId: originalTransactionId,
            on: db
        ) where row.bundleId == app.bundleId && row.customerId != customerId {
            try await store.recordEvent(
                bundleId: app.bundleId,
                kind: "transferred",
                detail: "\(environment) transaction \(row.transactionId) moved from \(row.customerId) to \(customerId)",
                at: now,
                on: db
            )
            row.customerId = customerId
            row.updatedAt = now
            try await store.update(row, on: db)
        }
    }

    /// Posts a transaction seen for the first time: its ledger row, a consumable's credits (unless it arrives
    /// revoked), and the money paid for it.
    ///
    /// - Parameters:
    ///   - source: the submission id; `notification:<uuid>` for a transaction only a notification carried;
    ///     `transactionHistory` for one only the catch-up read in a customer's history.
    ///   - confirmed: whether Apple itself vouches for it already (a notification is Apple's signed word).
    ///   - carryingRevocation: whether a revocation in the data goes in the row now (a submission); a notification
    ///     applies it afterwards, as a refund with its money (`revoke(_:…)`).
    @discardableResult
    func post(
        _ transaction: PurchaseTransaction,
        to customerId: String,
        app: ServerApp,
        product: CatalogProduct?,
        source: String,
        confirmed: Bool,
        carryingRevocation: Bool,
        now: Int64,
        on db: any SQLDatabase
    ) async throws -> LedgerRecord {
        let environment = transaction.environment.rawValue
        let revocation = carryingRevocation ? transaction.revocationDate : nil
        var record = LedgerRecord(
            environment: environment,
            transactionId: transaction.transactionId,
            bundleId: app.bundleId,
            customerId: customerId,
            originalTransactionId: transaction.originalTransactionId,
            productId: transaction.productId,
            productType: (product?.type ?? transaction.productType)?.rawValue,
            quantity: transaction.quantity,
            purchaseDate: transaction.purchaseDate.millisecondsSince1970,
            expiresDate: transaction.expiresDate?.millisecondsSince1970,
            revocationDate: revocation?.millisecondsSince1970,
            revocationReason: revocation == nil ? nil : (transaction.isUpgraded ? "upgraded" : "refund"),
            isUpgraded: transaction.isUpgraded,
            introductoryOffer: transaction.isIntroductoryOffer,
            ownership: transaction.ownership.rawValue,
            price: transaction.price ?? product?.price,
            currency: transaction.currency ?? product?.currency,
            storefront: transaction.storefront,
            webOrderLineItemId: transaction.webOrderLineItemId,
            submissionId: source,
            confirmed: confirmed,
            createdAt: now,
            updatedAt: now
        )
        record.takeBillingPlan(of: transaction)
        try await store.insert(record, on: db)
        if record.revocationDate == nil {
            try await credit(
                record,
                product: product,
                sign: 1,
                reference: Self.reference("purchase", of: record),
                at: now,
                on: db
            )
        }
        if let price = record.price, let currency = record.currency, transaction.ownership == .purchased, price > 0 {
            try await store.recordFinance(
                environment: environment,
                transactionId: transaction.transactionId,
                bundleId: app.bundleId,
                productId: transaction.productId,
                amount: price,
                currency: currency,
                at: record.purchaseDate,
                kind: "purchase",
                on: db
            )
        }
        return record
    }

    /// Moves a consumable's credits for a ledger row: what its quantity gives (`sign` 1) or takes back (`sign` −1).
    /// Products that are not consumables credit nothing.
    ///
    /// - Parameter reference: the balance entries' reference, `Ledger.reference(_:of:)`.
    func credit(
        _ row: LedgerRecord,
        product: CatalogProduct?,
        sign: Int64,
        reference: String,
        at now: Int64,
        on db: any SQLDatabase
    ) async throws {
        guard let product, product.type == .consumable else { return }
        for (credit, amount) in product.credits {
            try await store.addBalanceEntry(
                bundleId: row.bundleId,
                customerId: row.customerId,
                credit: credit,
                delta: sign * amount * Int64(row.quantity),
                reference: reference,
                at: now,
                on: db
            )
        }
    }

    /// A balance entry's reference: what happened (`purchase`, `refund`, `revoke`, …) to which transaction, so that
    /// each happens once per transaction and can be looked up (a rejection's credits, when Apple later vouches).
    static func reference(_ event: String, of row: LedgerRecord) -> String {
        "\(event):\(row.environment):\(row.transactionId)"
    }
}

extension PurchaseTransaction {
    /// A period of an introductory offer: a free trial or an introductory price (`offerType` 1 in a signed
    /// transaction; `is_trial_period` or `is_in_intro_offer_period` in a receipt).
    var isIntroductoryOffer: Bool { isTrialPeriod || isInIntroOfferPeriod }
}

extension LedgerRecord {
    /// Takes the billing plan and commitment the signed data carries, where the row has none yet (a row first
    /// recorded from a receipt learns them from a signed transaction); true when it changed.
    @discardableResult
    mutating func takeBillingPlan(of transaction: PurchaseTransaction) -> Bool {
        guard billingPlanType == nil, let plan = transaction.billingPlanType else { return false }
        billingPlanType = plan
        commitmentPeriod = transaction.commitment?.billingPeriodNumber
        commitmentPeriods = transaction.commitment?.totalBillingPeriods
        commitmentExpiresDate = transaction.commitment?.expiresDate?.millisecondsSince1970
        return true
    }
}
