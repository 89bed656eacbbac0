import Crypto
import Foundation
import TillContract
import TillCore
import TillSnapshot

/// Runs the app's side of every purchase: store → server → snapshot → content → finish.
///
/// For a purchased or restored transaction:
/// 1. the evidence (by default the signed transaction) is written to the ``Outbox`` and sent to the server, with
///    an idempotency key derived from the transaction id and the evidence, so that a resend is answered with the
///    first submission and the server's ledger records the transaction once;
/// 2. once the server has recorded it, the signed snapshot is refreshed (``EntitlementStore``);
/// 3. for a server-delivered product (the master list gives it files) the files are downloaded and checked
///    (``ContentStore``);
/// 4. only then is the transaction finished.
///
/// If any step fails the transaction stays unfinished: the store hands it back at the next launch
/// (``start()``) or poll (``run(every:)``), and it is delivered then, once. A cancelled payment is reported as
/// ``PurchaseOutcome/userCancelled(productId:)``, Ask to Buy as ``PurchaseOutcome/pending(_:)``, a transaction whose
/// signature did not verify on the device as ``PurchaseOutcome/unverified(_:_:)`` (never delivered).
///
/// With ``Finishing/byApp`` the app's own StoreKit code finishes transactions: the coordinator records each one it
/// is handed (``record(_:)``) or finds, and never finishes anything.
public actor PurchaseCoordinator<Store: TillStorefront> {
    /// Who finishes transactions.
    public enum Finishing: Sendable, Hashable {
        /// The coordinator, once a purchase is delivered (the default).
        case byTill
        /// The app's own StoreKit code: TillClient records purchases with the server and leaves finishing to it.
        case byApp
    }

    /// Which evidence to submit for a transaction.
    public enum Evidence: Sendable, Hashable {
        /// StoreKit 2's JWS (falling back to the transaction receipt, then the app receipt).
        case signedTransaction
        /// The iOS 6-style transaction receipt (falling back to the JWS, then the app receipt).
        case transactionReceipt
        /// The app receipt.
        case appReceipt
    }

    public nonisolated let storefront: Store
    public nonisolated let server: TillServerClient
    public nonisolated let customerId: String
    public nonisolated let outbox: Outbox
    public nonisolated let entitlements: EntitlementStore
    public nonisolated let content: ContentStore
    /// Sends the AppTransaction once per customer, and remembers that it did.
    public nonisolated let appTransactions: AppTransactionRecorder
    public nonisolated let evidence: Evidence
    public nonisolated let finishing: Finishing
    /// What happened to transactions handled in the background by ``run(every:)``; the newest 256 are kept until
    /// read.
    public nonisolated let events: AsyncStream<PurchaseEvent>
    let eventSink: AsyncStream<PurchaseEvent>.Continuation

    var catalogue: ProductCatalogue?
    /// Transactions being handled, with the callers waiting for the same outcome.
    var working: [String: [CheckedContinuation<PurchaseOutcome, Never>]] = [:]
    /// Transactions delivered in this run, with their outcome.
    var finished: [String: PurchaseOutcome] = [:]
    /// Store transactions the server acknowledged in this run, by how the store described them.
    var acknowledged: [String: SubmissionAnswer] = [:]
    /// Submissions of store transactions (by transaction id) the outbox sent and the server acknowledged in this run.
    var acknowledgedInOutbox: [String: SubmissionAnswer] = [:]
    /// The AppTransaction, once read.
    var appTransactionCache: StoreVerification<StoreAppTransaction>?
    /// The last background outcome reported per transaction (or product), so that a retry failing the same way is
    /// not reported again.
    var reported: [String: String] = [:]
    /// Told how the downloads of purchased or restored content progress (see ``observeDownloads(_:)``).
    var downloadProgress: (@Sendable (DownloadProgress) -> Void)?

    /// A coordinator over components the app built.
    public init(
        storefront: Store,
        server: TillServerClient,
        customerId: String,
        outbox: Outbox,
        entitlements: EntitlementStore,
        content: ContentStore,
        appTransactions: AppTransactionRecorder,
        evidence: Evidence = .signedTransaction,
        finishing: Finishing = .byTill
    ) {
        self.storefront = storefront
        self.server = server
        self.customerId = customerId
        self.outbox = outbox
        self.entitlements = entitlements
        self.content = content
        self.appTransactions = appTransactions
        self.evidence = evidence
        self.finishing = finishing
        (events, eventSink) = AsyncStream.makeStream(of: PurchaseEvent.self, bufferingPolicy: .bufferingNewest(256))
    }

    /// A coordinator keeping its outbox, snapshot, files and what became of the AppTransaction under `directory`
    /// (`outbox/`, `entitlements/`, `content/`, `app-transaction/`).
    ///
    /// - Parameter pinnedKeys: the server's snapshot keys shipped with the app, to verify snapshots offline.
    public init(
        storefront: Store,
        server: TillServerClient,
        bundleId: String,
        customerId: String,
        directory: URL,
        pinnedKeys: [SnapshotPublicKey] = [],
        backoff: Backoff = Backoff(),
        evidence: Evidence = .signedTransaction,
        finishing: Finishing = .byTill
    ) throws {
        self.init(
            storefront: storefront,
            server: server,
            customerId: customerId,
            outbox: try Outbox(
                directory: directory.appendingPathComponent("outbox", isDirectory: true),
                server: server,
                backoff: backoff
            ),
            entitlements: try EntitlementStore(
                directory: directory.appendingPathComponent("entitlements", isDirectory: true),
                bundleId: bundleId,
                customerId: customerId,
                server: server,
                pinnedKeys: pinnedKeys
            ),
            content: try ContentStore(
                directory: directory.appendingPathComponent("content", isDirectory: true),
                server: server
            ),
            appTransactions: try AppTransactionRecorder(
                directory: directory.appendingPathComponent("app-transaction", isDirectory: true),
                server: server,
                backoff: backoff
            ),
            evidence: evidence,
            finishing: finishing
        )
    }

    deinit { eventSink.finish() }

    // MARK: Launch

    /// What an app calls at launch: verifies the stored snapshot (fetching a fresh one when it is missing or
    /// rejected), sends everything waiting in the outbox, delivers the transactions left unfinished by an
    /// earlier run (StoreKit 2's `Transaction.unfinished`), and sends the AppTransaction if it was not sent for this
    /// customer yet.
    public func start() async -> LaunchReport {
        let stored = await entitlements.load()
        switch stored {
        case .verified: break
        case .missing, .rejected, .unverifiable: _ = try? await entitlements.refresh()
        }
        let resent = await resendOutbox(includingNotDue: true)
        let transactions = await handleUnfinished(force: true)
        return LaunchReport(
            storedSnapshot: stored,
            snapshot: await entitlements.snapshot,
            resent: resent,
            transactions: transactions,
            appTransaction: await sendAppTransaction()
        )
    }

    /// Sends the outbox's submissions (all of them, or those due): at launch, when the app comes back to the
    /// foreground, when the network comes back.
    @discardableResult
    public func resendOutbox(includingNotDue: Bool = true) async -> [OutboxDelivery] {
        let sent = await outbox.flush(includingNotDue: includingNotDue)
        for (entry, delivery) in sent { note(delivery, of: entry) }
        return sent.map(\.delivery)
    }

    /// Runs until the task is cancelled: handles what the store reports as it happens (StoreKit 2's
    /// `Transaction.updates`: renewals, Ask to Buy decisions, refunds and revocations, upgrades, purchases on other
    /// devices and by the family), and every `interval` seconds sends the outbox's due submissions and retries
    /// unfinished transactions. Outcomes go to ``events``.
    public func run(every interval: TimeInterval = 30) async {
        let updates = storefront.transactionUpdates()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await update in updates {
                    let outcome = await self.handle(update)
                    await self.report(outcome)
                }
            }
            group.addTask {
                while true {
                    do {
                        try await Task.sleep(nanoseconds: UInt64(max(interval, 0.001) * 1_000_000_000))
                    } catch {
                        return
                    }
                    await self.retry()
                }
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// One round of background work: due outbox submissions, then unfinished transactions, then the AppTransaction
    /// if an earlier attempt failed in a way a retry can fix (and its backoff is over).
    public func retry() async {
        await resendOutbox(includingNotDue: false)
        for outcome in await handleUnfinished(force: false) { report(outcome) }
        _ = await appTransactions.send(customerId: customerId, includingNotDue: false) {
            try await self.appTransaction()
        }
    }

    // MARK: Catalogue and purchases

    /// The master list, fetched again only when it changed (ETag).
    @discardableResult
    public func refreshCatalogue() async throws -> ProductCatalogue {
        switch try await server.products(ifNoneMatch: catalogue?.etag) {
        case .updated(let fresh):
            catalogue = fresh
            return fresh
        case .notModified:
            if let catalogue { return catalogue }
            guard case .updated(let fresh) = try await server.products() else {
                throw TillClientError(.invalidResponse, message: "the master list answered 304 to a plain request")
            }
            catalogue = fresh
            return fresh
        }
    }

    /// The products to show: the server's master list looked up in the store, with localized prices.
    public func offeredProducts() async throws -> OfferedProducts {
        let catalogue = try await refreshCatalogue()
        let lookup = try await storefront.products(catalogue.productIds)
        let byId = Dictionary(lookup.products.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return OfferedProducts(
            products: catalogue.products.compactMap { product in
                byId[product.productId].map { OfferedProduct(catalogue: product, store: $0) }
            },
            invalidProductIds: lookup.invalidProductIds
        )
    }

    /// Buys a product and delivers it: the outcome once the store has decided and, for a purchase, once it is
    /// delivered (or why not yet). A refusal by the store is ``PurchaseOutcome/failed(productId:_:)``; a store
    /// that cannot be reached throws.
    public func purchase(_ payment: Payment) async throws -> PurchaseOutcome {
        let result: StorePurchaseResult
        do {
            result = try await storefront.purchase(payment)
        } catch let error as StoreError {
            return .refusal(productId: payment.productId, error)
        }
        return await outcome(of: result, productId: payment.productId)
    }

    /// Buys `quantity` of `productId`.
    public func purchase(productId: String, quantity: Int = 1) async throws -> PurchaseOutcome {
        try await purchase(Payment(productId: productId, quantity: quantity))
    }

    /// What a purchase's result becomes: a transaction goes through the pipeline; the rest is reported as it is.
    func outcome(of result: StorePurchaseResult, productId: String) async -> PurchaseOutcome {
        switch result {
        case .success(let transaction): await handle([transaction], force: true)[0]
        case .userCancelled: .userCancelled(productId: productId)
        case .pending(let pending): .pending(pending)
        }
    }

    /// Records a transaction the app's own StoreKit code already has (a purchase it made, a SwiftUI store view's
    /// `onInAppPurchaseCompletion`, its own `Transaction.updates` loop): submitted, snapshot, content, and then
    /// finished only if the coordinator finishes transactions (``Finishing/byTill``). An unverified transaction is
    /// reported and not recorded.
    public func record(_ transaction: StoreVerification<StoreTransaction>) async -> PurchaseOutcome {
        await handle([transaction], force: true)[0]
    }

    /// Records the outcome of a purchase the app made itself (``record(_:)`` for a transaction; a cancellation or
    /// a pending payment is reported as it is).
    public func record(_ result: StorePurchaseResult, productId: String) async -> PurchaseOutcome {
        await outcome(of: result, productId: productId)
    }

    /// Handles every unfinished transaction the store reports now.
    public func handleUnfinished() async -> [PurchaseOutcome] { await handleUnfinished(force: true) }

    /// Compares what the store says the customer is entitled to now (StoreKit 2's
    /// `Transaction.currentEntitlements`) with the verified snapshot, and records each transaction the server does
    /// not have yet, or has not seen revoked, without finishing anything. Answers what became of each.
    ///
    /// The store's entitlements belong to the device's Apple Account: call it for the customer signed in to the
    /// app, as a restore would be.
    public func reconcile() async -> [PurchaseOutcome] {
        guard let current = try? await storefront.currentEntitlements(), !current.isEmpty else { return [] }
        let known = await entitlements.snapshot?.snapshot.purchases ?? []
        let byId = Dictionary(known.map { ($0.transactionId, $0) }, uniquingKeysWith: { first, _ in first })
        let missing = current.filter { verification in
            let transaction = verification.unsafePayloadValue
            guard let purchase = byId[transaction.transactionId] else { return true }
            return transaction.isRevoked && !purchase.revoked
        }
        guard !missing.isEmpty else { return [] }
        return await handle(missing, force: true)
    }

    /// Restores purchases through the store and delivers each, then reports: completed, nothing to restore, or
    /// failed (with what was delivered anyway).
    public func restore() async -> RestoreOutcome {
        let answer: StorefrontRestore
        do {
            answer = try await storefront.restorePurchases()
        } catch let error as StoreError {
            return .failed(RestoreFailure(storeError: error))
        } catch {
            return .failed(RestoreFailure(error: Self.clientError(error)))
        }
        switch answer {
        case .failed(let storeError):
            return .failed(RestoreFailure(storeError: storeError))
        case .nothingToRestore:
            _ = try? await entitlements.refresh()
            return .nothingToRestore
        case .restored(let transactions):
            var failure = RestoreFailure()
            for outcome in await handle(transactions, force: true) {
                switch outcome {
                case .delivered(let delivery): failure.delivered.append(delivery)
                case .notDelivered(let notDelivered): failure.notDelivered.append(notDelivered)
                case .unverified(let transaction, _): failure.unverified.append(transaction)
                case .userCancelled, .pending, .failed: break
                }
            }
            if failure.notDelivered.isEmpty && failure.unverified.isEmpty { return .completed(failure.delivered) }
            failure.error = failure.notDelivered.first?.error
            return .failed(failure)
        }
    }

    // MARK: The app's own transaction and subscriptions

    /// The app's signed AppTransaction (StoreKit 2, iOS 16), read from the store once and kept for the life of the
    /// coordinator; nil where the store has none.
    public func appTransaction() async throws -> StoreVerification<StoreAppTransaction>? {
        if let appTransactionCache { return appTransactionCache }
        let fresh = try await storefront.appTransaction()
        appTransactionCache = fresh
        return fresh
    }

    /// Sends the AppTransaction to the server for the customer (``AppTransactionRecorder``): once per customer and
    /// AppTransaction, however often it is called, unless `force` (after the server's refusal was fixed). ``start()``
    /// calls it; StoreKit 1 and StoreKit 2 before iOS 16 have none (``AppTransactionDelivery/unavailable``).
    @discardableResult
    public func sendAppTransaction(force: Bool = false) async -> AppTransactionDelivery {
        await appTransactions.send(customerId: customerId, force: force) { try await self.appTransaction() }
    }

    /// Asks the server to sign the customer's eligibility for a subscription's introductory offer, naming the
    /// customer by the AppTransaction's id when the store has one (the server needs it when it has no purchase of
    /// theirs yet).
    public func signIntroductoryEligibility(productId: String) async throws -> SignedIntroductoryEligibility {
        let appTransactionId = try? await appTransaction()?.unsafePayloadValue.appTransactionId
        return try await server.signIntroductoryEligibility(
            customerId: customerId,
            productId: productId,
            appTransactionId: appTransactionId ?? nil
        )
    }

    // MARK: Entitlements and credits

    /// Whether the verified snapshot grants `entitlement` now.
    public func isEntitled(to entitlement: String) async -> Bool { await entitlements.isEntitled(to: entitlement) }

    /// Credits of `name` left, from the verified snapshot.
    public func balance(of name: String) async -> Int64 { await entitlements.balance(of: name) }

    /// Spends consumable credits on the server (once per `requestId`, however often it is sent), then refreshes
    /// the snapshot and answers it. If the refresh fails after the debit, sending the same `requestId` again is
    /// safe.
    public func spend(_ amount: Int64, of credit: String, requestId: String) async throws -> VerifiedSnapshot {
        _ = try await server.debit(customerId: customerId, credit: credit, amount: amount, requestId: requestId)
        return try await entitlements.refresh()
    }

    /// Reports the progress of the files the pipeline downloads for purchased and restored products (a progress
    /// bar while a purchase is delivered); nil stops reporting. Cancelling the purchase's task from the handler
    /// stops the download and keeps the partial file: the transaction stays unfinished and is resumed later.
    public func observeDownloads(_ handler: (@Sendable (DownloadProgress) -> Void)?) {
        downloadProgress = handler
    }

    /// Downloads a product's files again (deleted, or new files added) while the customer is entitled.
    public func downloadContent(productId: String, progress: (@Sendable (DownloadProgress) -> Void)? = nil)
        async throws -> [StoredFile]
    {
        try await content.download(productId: productId, customerId: customerId, progress: progress)
    }
}
