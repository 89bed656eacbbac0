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
/// ``PurchaseOutcome/cancelled(_:)``, Ask to Buy as ``PurchaseOutcome/pending(_:)``.
public actor PurchaseCoordinator<Store: Storefront> {
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
    public nonisolated let evidence: Evidence
    /// What happened to transactions handled in the background by ``run(every:)``; the newest 256 are kept until
    /// read.
    public nonisolated let events: AsyncStream<PurchaseEvent>
    let eventSink: AsyncStream<PurchaseEvent>.Continuation

    var catalogue: ProductCatalogue?
    /// Queue entries being handled, with the callers waiting for the same outcome.
    var working: [String: [CheckedContinuation<PurchaseOutcome, Never>]] = [:]
    /// Queue entries finished in this run, with their outcome.
    var finished: [String: PurchaseOutcome] = [:]
    /// Store transactions the server acknowledged in this run.
    var acknowledged: [String: SubmissionAnswer] = [:]
    /// The last background outcome reported per queue entry, so that a retry failing the same way is not
    /// reported again.
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
        evidence: Evidence = .signedTransaction
    ) {
        self.storefront = storefront
        self.server = server
        self.customerId = customerId
        self.outbox = outbox
        self.entitlements = entitlements
        self.content = content
        self.evidence = evidence
        (events, eventSink) = AsyncStream.makeStream(of: PurchaseEvent.self, bufferingPolicy: .bufferingNewest(256))
    }

    /// A coordinator keeping its outbox, snapshot and files under `directory` (`outbox/`, `entitlements/`,
    /// `content/`).
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
        evidence: Evidence = .signedTransaction
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
            evidence: evidence
        )
    }

    deinit { eventSink.finish() }

    // MARK: Launch

    /// What ``start()`` found and did.
    public struct LaunchReport: Sendable, Hashable {
        /// The snapshot on disk: verified, missing, rejected (then a fresh one was fetched if possible).
        public var storedSnapshot: SnapshotLoad
        /// The snapshot in use after launch, if any.
        public var snapshot: VerifiedSnapshot?
        /// Submissions the outbox sent again.
        public var resent: [OutboxDelivery]
        /// The unfinished transactions the store handed back, and what became of each.
        public var transactions: [PurchaseOutcome]
    }

    /// What an app calls at launch: verifies the stored snapshot (fetching a fresh one when it is missing or
    /// rejected), sends everything waiting in the outbox, and delivers the transactions left unfinished by an
    /// earlier run.
    public func start() async -> LaunchReport {
        let stored = await entitlements.load()
        switch stored {
        case .verified: break
        case .missing, .rejected, .unverifiable: _ = try? await entitlements.refresh()
        }
        let resent = await outbox.flush(includingNotDue: true)
        for (entry, delivery) in resent { note(delivery, of: entry) }
        let transactions = await handleUnfinished(force: true)
        return LaunchReport(
            storedSnapshot: stored,
            snapshot: await entitlements.snapshot,
            resent: resent.map(\.delivery),
            transactions: transactions
        )
    }

    /// Runs until the task is cancelled: handles transaction updates as the store reports them, and every
    /// `interval` sends the outbox's due submissions and retries unfinished transactions. Outcomes go to
    /// ``events``.
    public func run(every interval: Duration = .seconds(30)) async {
        await run(every: interval, clock: ContinuousClock())
    }

    /// ``run(every:)`` on another clock (a test's manual clock).
    public func run<C: Clock>(every interval: C.Duration, clock: C) async {
        let updates = storefront.transactionUpdates()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await transaction in updates {
                    let outcome = await self.handle([transaction], force: false)[0]
                    await self.report(outcome)
                }
            }
            group.addTask {
                while true {
                    do { try await clock.sleep(for: interval) } catch { return }
                    await self.retry()
                }
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// One round of background work: due outbox submissions, then unfinished transactions.
    public func retry() async {
        for (entry, delivery) in await outbox.flush() { note(delivery, of: entry) }
        for outcome in await handleUnfinished(force: false) { report(outcome) }
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
        let byId = Dictionary(lookup.products.map { ($0.productId, $0) }, uniquingKeysWith: { first, _ in first })
        return OfferedProducts(
            products: catalogue.products.compactMap { product in
                byId[product.productId].map { OfferedProduct(catalogue: product, store: $0) }
            },
            invalidProductIds: lookup.invalidProductIds
        )
    }

    /// Buys a product and delivers it: the outcome once the store has decided and, for a purchase, once it is
    /// delivered (or why not yet).
    public func purchase(_ payment: Payment) async throws -> PurchaseOutcome {
        let transaction = try await storefront.purchase(payment)
        return await handle([transaction], force: true)[0]
    }

    /// Buys `quantity` of `productId`.
    public func purchase(productId: String, quantity: Int = 1) async throws -> PurchaseOutcome {
        try await purchase(Payment(productId: productId, quantity: quantity))
    }

    /// Handles every unfinished transaction the store reports now.
    public func handleUnfinished() async -> [PurchaseOutcome] { await handleUnfinished(force: true) }

    /// Restores purchases through the store and delivers each, then reports: completed, nothing to restore, or
    /// failed (with what was delivered anyway).
    public func restore() async -> RestoreOutcome {
        let answer: StorefrontRestore
        do {
            answer = try await storefront.restoreCompletedTransactions()
        } catch {
            return .failed(
                RestoreFailure(storeError: nil, error: Self.clientError(error), delivered: [], notDelivered: [])
            )
        }
        switch answer {
        case .failed(let storeError):
            return .failed(RestoreFailure(storeError: storeError, error: nil, delivered: [], notDelivered: []))
        case .nothingToRestore:
            _ = try? await entitlements.refresh()
            return .nothingToRestore
        case .restored(let transactions):
            var delivered: [Delivery] = []
            var notDelivered: [DeliveryFailure] = []
            for outcome in await handle(transactions, force: true) {
                switch outcome {
                case .delivered(let delivery): delivered.append(delivery)
                case .notDelivered(let failure): notDelivered.append(failure)
                case .cancelled, .pending, .failed: break
                }
            }
            if notDelivered.isEmpty { return .completed(delivered) }
            return .failed(
                RestoreFailure(
                    storeError: nil,
                    error: notDelivered.first?.error,
                    delivered: delivered,
                    notDelivered: notDelivered
                )
            )
        }
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
