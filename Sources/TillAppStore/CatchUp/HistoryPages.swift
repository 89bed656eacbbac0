import Foundation
import Logging
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillStorage

/// A page of one App Store customer's Transaction History, verified and applied to the ledger: what the catch-up
/// (`TransactionHistoryReader`) and the imports (`ImportReader`) both do with each page they read.
struct HistoryPages: AppStoreRoom, Sendable {
    let services: AppStoreServices

    /// Apple's notifications, the purchase lock and the renewal states.
    var notificationStore: NotificationStore { NotificationStore(database: database) }
    /// Where each history stands (the catch-up's tables).
    var catchUpStore: CatchUpStore { CatchUpStore(database: database) }

    /// What one page did.
    struct Effect: Sendable {
        var recorded = 0
        var revoked = 0
        var updated = 0
        var unchanged = 0
        /// Transactions of purchases no customer owns, read without a claimant: nothing recorded.
        var unmatched = 0
        /// Transactions of purchases another customer than the claimant owns: nothing recorded.
        var conflicts = 0
        /// The purchases (original transactions) of the page read for their owner.
        var listed: Set<String> = []
    }

    /// The page's signed transactions that verify: Apple's signature and chain, for this app, in this environment.
    /// The others are logged; nothing of them is recorded.
    func verified(_ signedTransactions: [String], app: ServerApp, environment: AppStoreEnvironment) async
        -> [(PurchaseTransaction, JWSTransactionDecodedPayload)]
    {
        var verified: [(PurchaseTransaction, JWSTransactionDecodedPayload)] = []
        for jws in signedTransactions {
            switch await verifier.verifySigned(jws, as: JWSTransactionDecodedPayload.self, app: app) {
            case .valid(let signed):
                guard signed.environment == environment, let transaction = signed.purchaseTransaction() else {
                    logger.warning("a transaction of \(environment.rawValue) Transaction History is not its data")
                    continue
                }
                verified.append((transaction, signed))
            case .invalid(let failure):
                logger.warning(
                    "a transaction of Transaction History does not verify: \(failure.reason): \(failure.detail)"
                )
            }
        }
        return verified
    }

    /// Applies one page in one database transaction, with its revision: each transaction goes to its owner's ledger
    /// as Apple's signed word (`Ledger.applyHistory`), unless a notification signed later already told the ledger
    /// about it.
    ///
    /// A purchase no customer owns is left alone (`unmatched`: no customer is invented), unless the page is read for
    /// a `claimant` (an import's customer): then it becomes theirs. A purchase another customer owns stays theirs
    /// (`conflicts`). `alsoRecord` runs last in the same transaction (an import's row keeps its progress there).
    func apply(
        _ page: [(PurchaseTransaction, JWSTransactionDecodedPayload)],
        app: ServerApp,
        environment: AppStoreEnvironment,
        anchor: String,
        revision: String?,
        claimant: String? = nil,
        source: EventSource,
        alsoRecord: (@Sendable (Effect, ChangeSet) async throws -> Void)? = nil
    ) async throws -> Effect {
        let catalogue = try await self.catalogue.products(of: app.bundleId)
        let now = clock.milliseconds
        return try await ledger.transaction(source: source) { changes -> Effect in
            let db = changes.db
            var effect = Effect()
            let account = try await claimant.asyncMap {
                try await self.ledger.customerStore.admit(bundleId: app.bundleId, customerId: $0, at: now, on: db).owner
            }
            for (transaction, signed) in page {
                try await self.notificationStore.lockPurchase(
                    environment: environment,
                    originalTransactionId: transaction.originalTransactionId,
                    on: db
                )
                let known = try await self.ledger.owner(of: transaction, bundleId: app.bundleId, on: db)
                guard let owner = known ?? account else {
                    effect.unmatched += 1  // never submitted, and no one claims it: no customer is invented
                    continue
                }
                if let account, owner != account {
                    effect.conflicts += 1  // another customer's: an import never moves a purchase
                    continue
                }
                effect.listed.insert(transaction.originalTransactionId)
                if let signedDate = signed.signedDate?.millisecondsSince1970,
                    try await self.catchUpStore.hasNotificationApplied(
                        environment: environment,
                        transactionId: transaction.transactionId,
                        signedAfter: signedDate,
                        on: db
                    )
                {
                    effect.unchanged += 1
                    continue
                }
                switch try await self.ledger.applyHistory(
                    transaction,
                    signed: signed,
                    owner: owner,
                    app: app,
                    catalogue: catalogue,
                    now: now,
                    in: changes
                ) {
                case .recorded: effect.recorded += 1
                case .revoked: effect.revoked += 1
                case .updated: effect.updated += 1
                case .unchanged: effect.unchanged += 1
                }
            }
            if claimant == nil || !effect.listed.isEmpty {
                try await self.catchUpStore.saveHistoryPage(
                    bundleId: app.bundleId,
                    environment: environment,
                    anchor: anchor,
                    revision: revision,
                    listed: effect.listed,
                    at: now,
                    on: db
                )
            }
            try await alsoRecord?(effect, changes)
            return effect
        }
    }
}

extension Optional {
    /// The value mapped by an async `transform`, or nil.
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
