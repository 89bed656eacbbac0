import Foundation
import Logging
import SQLKit
import TillContract
import TillCore
import TillFormats
import TillStorage

/// The ledger: the only code that posts transactions, credits and debits balances, revokes, refunds, books money,
/// keeps the renewal state that grants a grace period, moves a submission between environments and links guests to
/// accounts. Every other component tells it what happened (a submission verified, Apple's answer, a notification, the
/// catch-up, an operator); it decides what that does to the customer's purchases, balances and the company's books,
/// and records each change as a typed event in the same database transaction (`ChangeSet`, `EventLog`).
///
/// Each rule is written once here: a first sight of a transaction is `post`, whoever saw it; a consumable's credits
/// are moved by `credit`, whether bought, refunded, revoked or given back. Its writes go through `LedgerStore`, which
/// nothing else holds (`LayoutTests.onlyTheLedgerWritesMoneyCreditsAndAccess`).
public struct Ledger: Sendable {
    package let database: TillDatabase
    /// The customers and their aliases.
    package var customerStore: CustomerStore { CustomerStore(database: database) }
    /// What the ledger holds, read.
    package var purchaseStore: PurchaseStore { PurchaseStore(database: database) }
    /// Apple's notifications, the purchase lock and the renewal states.
    package var notificationStore: NotificationStore { NotificationStore(database: database) }
    package let events: EventLog
    package let clock: ServerClock
    /// The ledger's writes.
    let writes: LedgerStore

    package init(database: TillDatabase, events: EventLog, clock: ServerClock) {
        self.database = database
        self.events = events
        self.clock = clock
        self.writes = LedgerStore(database: database)
    }

    /// Runs `body` in one database transaction in which the ledger may change things: its events are written at the
    /// end, before the commit (`EventLog.transaction`).
    package func transaction<Result: Sendable>(
        source: EventSource,
        _ body: @escaping @Sendable (ChangeSet) async throws -> Result
    ) async throws -> Result {
        try await events.transaction(source: source, body)
    }

    /// Makes every credit's total again from its entries: after a bulk load that wrote balance entries by itself
    /// (`till bench console`'s ledger), as `Figures.rebuild()` does for the figures.
    public func rebuildBalances() async throws {
        try await database.transaction { db in try await self.writes.rebuildBalances(on: db) }
    }

    /// What recording a submission's transactions did.
    package struct Recording: Sendable {
        /// Transactions not credited because another customer owns them.
        package var refused: [RefusedTransaction] = []
        /// Purchases (environment, original transaction id) recorded for the first time: notifications about
        /// them may have come first and be waiting.
        package var firstRecorded: [PurchaseKey] = []
    }

    /// One purchase: an original transaction in an environment.
    package struct PurchaseKey: Hashable, Sendable {
        package var environment: AppStoreEnvironment
        package var originalTransactionId: String
    }

    /// What first told the ledger of a transaction, as its row keeps it (`source` and `submission_id`).
    package struct Origin: Sendable {
        package var source: LedgerSource
        package var id: String

        package static func submission(_ id: String) -> Origin { Origin(source: .submission, id: id) }
        package static func notification(_ uuid: String) -> Origin {
            Origin(source: .notification, id: "notification:\(uuid)")
        }
        package static let transactionHistory = Origin(source: .transactionHistory, id: "transactionHistory")
        package static func grant(_ id: String) -> Origin { Origin(source: .operator, id: "operator:\(id)") }
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
    package func record(
        _ transactions: [PurchaseTransaction],
        submission: SubmissionRecord,
        app: ServerApp,
        catalogue: [String: CatalogProduct],
        confirmed: Bool = false,
        transfers: Bool = true,
        in changes: ChangeSet
    ) async throws -> Recording {
        var recording = Recording()
        let now = clock.milliseconds
        let db = changes.db
        for transaction in transactions {
            let product = catalogue[transaction.productId]
            // One decision per purchase at a time: a notification about it waits for this one (PostgreSQL).
            try await notificationStore.lockPurchase(
                environment: transaction.environment,
                originalTransactionId: transaction.originalTransactionId,
                on: db
            )
            // The purchase's rows, read once: the transaction's own row is among them if it was seen before (a
            // transaction's original id is part of Apple's signed data, so its row is found by it).
            let rows = try await purchaseStore.transactions(
                environment: transaction.environment,
                originalTransactionId: transaction.originalTransactionId,
                on: db
            )
            var existing = rows.first { $0.transactionId == transaction.transactionId }
            // Who owns the purchase now: the transaction's row, else the purchase's other transactions.
            let purchase = existing.map { [$0] } ?? rows.filter { $0.bundleId == app.bundleId }
            if let owner = purchase.last?.customerId, owner != submission.customerId {
                guard transfers, app.restorePolicy == .transferToLatest,
                    !(product?.type ?? transaction.productType ?? .consumable).isCreditedPerPurchase
                else {
                    recording.refused.append(
                        RefusedTransaction(transactionId: transaction.transactionId, reason: "ownedByAnotherCustomer")
                    )
                    continue
                }
                try await transfer(
                    environment: transaction.environment,
                    originalTransactionId: transaction.originalTransactionId,
                    app: app,
                    from: owner,
                    to: submission.customerId,
                    now: now,
                    in: changes
                )
                existing = try await purchaseStore.transaction(
                    environment: transaction.environment,
                    transactionId: transaction.transactionId,
                    on: db
                )
            }
            if var existing {
                let before = existing
                if let revoked = transaction.revocationDate, existing.revocationDate == nil {
                    existing.revocationDate = revoked.millisecondsSince1970
                    existing.revocationReason = transaction.isUpgraded ? .upgraded : .refund
                }
                existing.isUpgraded = existing.isUpgraded || transaction.isUpgraded
                existing.introductoryOffer = existing.introductoryOffer || transaction.isIntroductoryOffer
                existing.expiresDate = transaction.expiresDate?.millisecondsSince1970 ?? existing.expiresDate
                existing.takeBillingPlan(of: transaction)
                // A resend, or Apple's answer carrying what the row says already, writes nothing.
                guard existing != before else { continue }
                existing.updatedAt = now
                try await writes.update(existing, in: changes)
                if before.revocationDate == nil, existing.revocationReason == .refund {
                    var event = PendingEvent(
                        .purchase_refunded,
                        about: existing,
                        product: product,
                        occurredAt: existing.revocationDate ?? now
                    )
                    event.refund = Components.Schemas.EventRefund(share: 100_000)
                    changes.record(event)
                }
                noteExtension(from: before, to: existing, product: product, at: now, in: changes)
                continue
            }
            let key = PurchaseKey(
                environment: transaction.environment,
                originalTransactionId: transaction.originalTransactionId
            )
            if !recording.firstRecorded.contains(key) { recording.firstRecorded.append(key) }
            try await post(
                transaction,
                to: submission.customerId,
                app: app,
                product: product,
                origin: .submission(submission.id),
                confirmed: confirmed,
                carryingRevocation: true,
                now: now,
                in: changes
            )
        }
        return recording
    }

    /// Moves every transaction of a purchase to `customerId` (the restore policy `transferToLatest`): a
    /// subscription's renewals and a non-consumable's repurchases go together, so the purchase has one owner. Each of
    /// the two customers gets a `customer.transferred` event.
    private func transfer(
        environment: AppStoreEnvironment,
        originalTransactionId: String,
        app: ServerApp,
        from previous: String,
        to customerId: String,
        now: Int64,
        in changes: ChangeSet
    ) async throws {
        var moved: [String] = []
        for var row in try await purchaseStore.transactions(
            environment: environment,
            originalTransactionId: originalTransactionId,
            on: changes.db
        ) where row.bundleId == app.bundleId && row.customerId != customerId {
            row.customerId = customerId
            row.updatedAt = now
            try await writes.update(row, in: changes)
            moved.append(row.transactionId)
        }
        guard !moved.isEmpty else { return }
        let transfer = Components.Schemas.EventTransfer(
            fromCustomerId: previous,
            toCustomerId: customerId,
            reason: .restore,
            transactionIds: moved
        )
        for customer in [previous, customerId] {
            var event = PendingEvent(
                .customer_transferred,
                bundleId: app.bundleId,
                customerId: customer,
                occurredAt: now,
                environment: environment
            )
            event.transfer = transfer
            changes.record(event)
        }
    }

    /// Posts a transaction seen for the first time: its ledger row, a consumable's credits (unless it arrives
    /// revoked), the money paid for it, and its event (a first purchase, a renewal, a non-renewing purchase, credits
    /// bought; `eventType` for another, an operator's grant).
    ///
    /// - Parameters:
    ///   - origin: what told the ledger of it: a submission, a notification, the catch-up, an operator's grant.
    ///   - confirmed: whether Apple itself vouches for it already (a notification is Apple's signed word).
    ///   - carryingRevocation: whether a revocation in the data goes in the row now (a submission); a notification
    ///     applies it afterwards, as a refund with its money (`applyNotified`).
    @discardableResult
    package func post(
        _ transaction: PurchaseTransaction,
        to customerId: String,
        app: ServerApp,
        product: CatalogProduct?,
        origin: Origin,
        confirmed: Bool,
        carryingRevocation: Bool,
        now: Int64,
        as eventType: EventType? = nil,
        in changes: ChangeSet
    ) async throws -> LedgerRecord {
        let revocation = carryingRevocation ? transaction.revocationDate : nil
        var record = LedgerRecord(
            environment: transaction.environment,
            transactionId: transaction.transactionId,
            bundleId: app.bundleId,
            customerId: customerId,
            originalTransactionId: transaction.originalTransactionId,
            productId: transaction.productId,
            productType: product?.type ?? transaction.productType,
            quantity: transaction.quantity,
            purchaseDate: transaction.purchaseDate.millisecondsSince1970,
            expiresDate: transaction.expiresDate?.millisecondsSince1970,
            revocationDate: revocation?.millisecondsSince1970,
            revocationReason: revocation == nil ? nil : (transaction.isUpgraded ? .upgraded : .refund),
            isUpgraded: transaction.isUpgraded,
            introductoryOffer: transaction.isIntroductoryOffer,
            ownership: transaction.ownership,
            // A receipt carries no price, so the catalogue's stands in; but a non-consumable's transaction other
            // than its original is the one purchase handed out again (a restore, another device, a purchase of what
            // the account owns), for which the App Store charged nothing: the original carries the money.
            price: Self.handsOutAgain(transaction, product) ? 0 : transaction.price ?? product?.price,
            currency: transaction.currency ?? product?.currency,
            storefront: transaction.storefront,
            webOrderLineItemId: transaction.webOrderLineItemId,
            submissionId: origin.id,
            source: origin.source,
            confirmed: confirmed,
            createdAt: now,
            updatedAt: now
        )
        record.takeBillingPlan(of: transaction)
        try await writes.insert(record, in: changes)
        var credited: [String: Int64] = [:]
        if record.revocationDate == nil {
            credited = try await credit(
                record,
                product: product,
                sign: 1,
                reference: Self.reference("purchase", of: record),
                at: now,
                in: changes
            )
        }
        if let price = record.price, let currency = record.currency, transaction.ownership == .purchased, price > 0 {
            try await writes.recordFinance(
                of: record,
                amount: price,
                currency: currency,
                at: record.purchaseDate,
                kind: .purchase,
                in: changes
            )
        }
        let type = eventType ?? Self.purchaseEvent(record, product)
        var event = PendingEvent(
            type,
            about: record,
            product: product,
            occurredAt: record.purchaseDate,
            balanceChanges: credited
        )
        event.price = record.revenue
        if type == .subscription_renewed {
            event.subscription = Components.Schemas.EventSubscription(
                originalTransactionId: record.originalTransactionId,
                productId: record.productId,
                expiresDate: record.expiresDate
            )
        }
        changes.record(event)
        return record
    }

    /// Whether `transaction` is a non-consumable (or free subscription) bought before, handed out again under a
    /// transaction id of its own: it names an earlier original transaction.
    package static func handsOutAgain(_ transaction: PurchaseTransaction, _ product: CatalogProduct?) -> Bool {
        guard !transaction.isOriginal else { return false }
        switch product?.type ?? transaction.productType {
        case .nonConsumable, .freeSubscription: return true
        default: return false
        }
    }

    /// What a transaction seen for the first time is: a first purchase, a renewal, a non-renewing purchase, credits.
    package static func purchaseEvent(_ row: LedgerRecord, _ product: CatalogProduct?) -> EventType {
        switch product?.type ?? row.productType {
        case .consumable: .credits_purchased
        case .nonRenewing: .purchase_nonRenewing
        case .autoRenewable: row.transactionId == row.originalTransactionId ? .purchase_initial : .subscription_renewed
        case .nonConsumable, .freeSubscription: .purchase_initial
        case nil:
            // A receipt's purchase the catalogue does not know: a period after the first is a renewal.
            row.expiresDate != nil && row.transactionId != row.originalTransactionId
                ? .subscription_renewed : .purchase_initial
        }
    }

    /// Moves a consumable's credits for a ledger row: what its quantity gives (`sign` 1) or takes back (`sign` −1).
    /// Products that are not consumables credit nothing. Answers what moved, once per reference (a second call with
    /// the same reference moves nothing).
    ///
    /// - Parameter reference: the balance entries' reference, `Ledger.reference(_:of:)`.
    @discardableResult
    package func credit(
        _ row: LedgerRecord,
        product: CatalogProduct?,
        sign: Int64,
        reference: String,
        at now: Int64,
        in changes: ChangeSet
    ) async throws -> [String: Int64] {
        guard let product, product.type == .consumable else { return [:] }
        var moved: [String: Int64] = [:]
        for (credit, amount) in product.credits {
            // The catalogue keeps `amount` within `largestCreditAmount`; a product stored before it did cannot wrap.
            let (delta, overflow) = amount.multipliedReportingOverflow(by: sign * Int64(row.quantity))
            guard !overflow, delta.magnitude <= Ledger.largestBalance.magnitude else {
                throw LedgerRefusal(
                    .invalidAmount,
                    "\(product.productId) gives \(amount) \(credit) a unit: more than a balance may hold"
                )
            }
            if try await writes.addBalanceEntry(
                bundleId: row.bundleId,
                customerId: row.customerId,
                credit: credit,
                delta: delta,
                reference: reference,
                at: now,
                on: changes.db
            ) {
                moved[credit] = delta
            }
        }
        return moved
    }

    /// Moves a row's credits as `credit` does, under the reference `Ledger.reference(what, of: row)`, and makes the
    /// event of `type` about the row that carries what moved: a refund, its reversal, a rejection. The caller adds
    /// what is its own to the event and records it.
    func creditEvent(
        _ type: EventType,
        of row: LedgerRecord,
        product: CatalogProduct?,
        sign: Int64,
        reference what: String,
        at now: Int64,
        occurredAt: Int64,
        in changes: ChangeSet
    ) async throws -> PendingEvent {
        let moved = try await credit(
            row,
            product: product,
            sign: sign,
            reference: Self.reference(what, of: row),
            at: now,
            in: changes
        )
        return PendingEvent(type, about: row, product: product, occurredAt: occurredAt, balanceChanges: moved)
    }

    /// A balance entry's reference: what happened (`purchase`, `refund`, `revoke`, …) to which transaction, so that
    /// each happens once per transaction and can be looked up (a rejection's credits, when Apple later vouches).
    package static func reference(_ event: String, of row: LedgerRecord) -> String {
        "\(event):\(row.environment.rawValue):\(row.transactionId)"
    }

    /// A known period's end moved later without a new transaction: Apple extended it (a renewal-date extension).
    package func noteExtension(
        from before: LedgerRecord,
        to after: LedgerRecord,
        product: CatalogProduct?,
        at now: Int64,
        in changes: ChangeSet
    ) {
        guard let previous = before.expiresDate, let expires = after.expiresDate, expires > previous else { return }
        var event = PendingEvent(.subscription_extended, about: after, product: product, occurredAt: now)
        event.subscription = Components.Schemas.EventSubscription(
            originalTransactionId: after.originalTransactionId,
            productId: after.productId,
            expiresDate: expires,
            previousExpiresDate: previous
        )
        changes.record(event)
    }
}

extension PurchaseTransaction {
    /// A period of an introductory offer: a free trial or an introductory price (`offerType` 1 in a signed
    /// transaction; `is_trial_period` or `is_in_intro_offer_period` in a receipt).
    package var isIntroductoryOffer: Bool { isTrialPeriod || isInIntroOfferPeriod }
}

extension LedgerRecord {
    /// Takes the billing plan and commitment the signed data carries, where the row has none yet (a row first
    /// recorded from a receipt learns them from a signed transaction); true when it changed.
    @discardableResult
    package mutating func takeBillingPlan(of transaction: PurchaseTransaction) -> Bool {
        guard billingPlanType == nil, let plan = transaction.billingPlanType else { return false }
        billingPlanType = plan
        commitmentPeriod = transaction.commitment?.billingPeriodNumber
        commitmentPeriods = transaction.commitment?.totalBillingPeriods
        commitmentExpiresDate = transaction.commitment?.expiresDate?.millisecondsSince1970
        return true
    }
}
