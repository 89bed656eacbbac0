import Foundation

/// The storefront over StoreKit 1, for apps that still use it: `SKProductsRequest`, an `SKPaymentQueue` observer
/// (purchasing, purchased, failed, restored, deferred), `SKPaymentDiscount` from the server's signature, the app
/// receipt (refreshed with `SKReceiptRefreshRequest` when missing), `restoreCompletedTransactions`, and
/// `finishTransaction` when the coordinator has delivered.
///
/// StoreKit 1 signs nothing per transaction: its transactions are ``StoreVerification/verified(_:)`` and the
/// coordinator sends the app receipt as their evidence, which the server verifies.
///
/// Generic over ``StoreKit1Interface``: on Apple platforms `StoreKit1Storefront()` runs on Apple's StoreKit
/// (``SystemStoreKit1``); tests run the same code on a fake. Make it once, at launch: it observes the payment queue
/// from then on, as Apple asks.
public struct StoreKit1Storefront<Kit: StoreKit1Interface>: TillStorefront {
    public let kit: Kit
    /// Whether failed transactions are finished here (nothing was charged); false when the app's own StoreKit code
    /// finishes every transaction (``PurchaseCoordinator/Finishing/byApp``).
    public let finishesFailedPayments: Bool
    private let queue: Queue

    public init(kit: Kit, finishesFailedPayments: Bool = true) {
        self.kit = kit
        self.finishesFailedPayments = finishesFailedPayments
        let queue = Queue()
        self.queue = queue
        kit.observe { event in
            let actions = queue.handle(event, finishFailed: finishesFailedPayments)
            if actions.finish.isEmpty {
                actions.run()
            } else {
                // A failed payment is finished before its caller hears of it.
                Task {
                    for handle in actions.finish { await kit.finish(handle: handle) }
                    actions.run()
                }
            }
        }
    }

    public func canMakePayments() async throws -> Bool { kit.canMakePayments() }

    public func products(_ identifiers: [String]) async throws -> ProductLookup {
        let lookup = try await kit.products(for: Set(identifiers))
        let order = Dictionary(identifiers.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        return ProductLookup(
            products: lookup.products.sorted { (order[$0.id] ?? .max) < (order[$1.id] ?? .max) },
            invalidProductIds: lookup.invalidProductIds.sorted { (order[$0] ?? .max) < (order[$1] ?? .max) }
        )
    }

    /// Adds the payment to the queue and waits for the observer to hear how it ended: purchased, failed (a
    /// cancellation is ``StorePurchaseResult/userCancelled``, anything else a thrown ``StoreError``) or deferred.
    public func purchase(_ payment: Payment) async throws -> StorePurchaseResult {
        guard (1...10).contains(payment.quantity) else {
            throw StoreError(.paymentInvalid, message: "a payment's quantity is 1 to 10, not \(payment.quantity)")
        }
        var discount: StoreKit1Payment.Discount?
        if let offer = payment.promotionalOffer {
            guard case .original(let keyIdentifier, let nonce, let timestamp, let signature) = offer.signature else {
                throw StoreError(
                    .unsupported,
                    message: "StoreKit 1 takes a promotional offer's original signature only, not a JWS"
                )
            }
            discount = StoreKit1Payment.Discount(
                identifier: offer.offerIdentifier,
                keyIdentifier: keyIdentifier,
                nonce: nonce,
                signature: signature,
                timestamp: timestamp
            )
        }
        if payment.introductoryOfferEligibility != nil || payment.winBackOfferId != nil {
            throw StoreError(
                .unsupported,
                message: "StoreKit 1 has no introductory-offer eligibility or win-back offers"
            )
        }
        let request = StoreKit1Payment(
            productIdentifier: payment.productId,
            quantity: payment.quantity,
            applicationUsername: payment.appAccountToken?.uuidString.lowercased(),
            paymentDiscount: discount
        )
        let id = UUID()
        let kit = self.kit
        let queue = self.queue
        return try await withCheckedThrowingContinuation { continuation in
            queue.wait(id, for: payment.productId, continuation)
            Task {
                do {
                    try await kit.add(request)
                } catch {
                    queue.stopWaiting(id)?.resume(throwing: error)
                }
            }
        }
    }

    /// The queue's transactions: purchased and restored ones to deliver; failed ones are finished here (when
    /// ``finishesFailedPayments``) and reported.
    public func unfinishedTransactions() async throws -> [StoreUpdate] {
        var updates: [StoreUpdate] = []
        for transaction in await kit.transactions() {
            switch transaction.state {
            case .purchased, .restored:
                updates.append(.transaction(.verified(Queue.transaction(transaction))))
            case .failed:
                if finishesFailedPayments { await kit.finish(handle: transaction.handle) }
                updates.append(.failed(productId: transaction.productIdentifier, Queue.error(transaction)))
            case .purchasing, .deferred:
                break
            }
        }
        return updates
    }

    /// What the observer hears that no ``purchase(_:)`` or restore is waiting for: purchases approved after Ask to
    /// Buy, renewals, purchases on other devices, declined payments. What it heard before anyone iterated a stream
    /// of updates comes first in the next one.
    public func transactionUpdates() -> AsyncStream<StoreUpdate> {
        let (stream, continuation) = AsyncStream.makeStream(of: StoreUpdate.self, bufferingPolicy: .unbounded)
        let id = queue.subscribe(continuation)
        let queue = self.queue
        continuation.onTermination = { _ in queue.unsubscribe(id) }
        return stream
    }

    public func finish(_ transaction: StoreTransaction) async throws {
        await kit.finish(handle: transaction.id)
    }

    /// `restoreCompletedTransactions()`: the restored transactions the observer hears until the restore finishes.
    public func restorePurchases() async throws -> StorefrontRestore {
        let kit = self.kit
        let queue = self.queue
        return await withCheckedContinuation { continuation in
            if queue.waitForRestore(continuation) { kit.restoreCompletedTransactions(applicationUsername: nil) }
        }
    }

    /// StoreKit 1 has no current entitlements: the app receipt lists them, and the server reads it.
    public func currentEntitlements() async throws -> [StoreVerification<StoreTransaction>] { [] }

    /// The receipt file, refreshed from the store (`SKReceiptRefreshRequest`) when the device has none.
    public func appReceipt() async throws -> String? {
        if let receipt = await kit.appReceipt() { return receipt.base64EncodedString() }
        try await kit.refreshReceipt()
        return await kit.appReceipt()?.base64EncodedString()
    }

    /// StoreKit 1 has no AppTransaction.
    public func appTransaction() async throws -> StoreVerification<StoreAppTransaction>? { nil }

    /// StoreKit 1 has no subscription statuses: the server's customer view has them.
    public func subscriptionStatuses(groupId: String) async throws -> [StoreSubscriptionStatus] { [] }
}

extension StoreKit1Storefront {
    /// Who waits for what the observer hears.
    final class Queue: Sendable {
        private struct State {
            var purchases:
                [(id: UUID, productId: String, continuation: CheckedContinuation<StorePurchaseResult, any Error>)] = []
            var restores: [CheckedContinuation<StorefrontRestore, Never>] = []
            var restored: [StoreVerification<StoreTransaction>] = []
            var subscribers: [UUID: AsyncStream<StoreUpdate>.Continuation] = [:]
            /// Updates heard while nobody iterated ``transactionUpdates()``, for the first who does: StoreKit replays
            /// the queue's unfinished transactions as soon as the observer is added, before an app's loop starts.
            var unheard: [StoreUpdate] = []
        }

        /// What handling an event leaves to do outside the lock: transactions to finish, callers to resume.
        struct Actions: Sendable {
            var finish: [String] = []
            var resumes: [@Sendable () -> Void] = []
            func run() { for resume in resumes { resume() } }
        }

        private let state = Locked(State())

        func wait(
            _ id: UUID,
            for productId: String,
            _ continuation: CheckedContinuation<StorePurchaseResult, any Error>
        ) {
            state.withLock { $0.purchases.append((id, productId, continuation)) }
        }

        func stopWaiting(_ id: UUID) -> CheckedContinuation<StorePurchaseResult, any Error>? {
            state.withLock { state in
                guard let index = state.purchases.firstIndex(where: { $0.id == id }) else { return nil }
                return state.purchases.remove(at: index).continuation
            }
        }

        /// Whether the caller starts a restore (none was running).
        func waitForRestore(_ continuation: CheckedContinuation<StorefrontRestore, Never>) -> Bool {
            state.withLock { state in
                state.restores.append(continuation)
                return state.restores.count == 1
            }
        }

        func subscribe(_ continuation: AsyncStream<StoreUpdate>.Continuation) -> UUID {
            let id = UUID()
            state.withLock { state in
                for update in state.unheard { continuation.yield(update) }
                state.unheard = []
                state.subscribers[id] = continuation
            }
            return id
        }

        func unsubscribe(_ id: UUID) {
            _ = state.withLock { $0.subscribers.removeValue(forKey: id) }
        }

        /// Routes one observer callback: a purchase's outcome to the ``purchase(_:)`` waiting for its product (the
        /// oldest first), a restored transaction to the running restore, anything else to the updates.
        func handle(_ event: StoreKit1Event, finishFailed: Bool) -> Actions {
            state.withLock { state in
                var actions = Actions()
                func broadcast(_ update: StoreUpdate) {
                    guard !state.subscribers.isEmpty else { return state.unheard.append(update) }
                    let subscribers = Array(state.subscribers.values)
                    actions.resumes.append { for subscriber in subscribers { subscriber.yield(update) } }
                }
                func waiter(for productId: String) -> CheckedContinuation<StorePurchaseResult, any Error>? {
                    guard let index = state.purchases.firstIndex(where: { $0.productId == productId }) else {
                        return nil
                    }
                    return state.purchases.remove(at: index).continuation
                }
                switch event {
                case .updated(let transactions):
                    for transaction in transactions {
                        let productId = transaction.productIdentifier
                        switch transaction.state {
                        case .purchasing:
                            break
                        case .deferred:
                            let pending = PendingPurchase(productId: productId, quantity: transaction.quantity)
                            if let waiter = waiter(for: productId) {
                                actions.resumes.append { waiter.resume(returning: .pending(pending)) }
                            }
                        case .purchased:
                            let value = StoreVerification.verified(Self.transaction(transaction))
                            if let waiter = waiter(for: productId) {
                                actions.resumes.append { waiter.resume(returning: .success(value)) }
                            } else {
                                broadcast(.transaction(value))
                            }
                        case .failed:
                            if finishFailed { actions.finish.append(transaction.handle) }
                            let error = Self.error(transaction)
                            if let waiter = waiter(for: productId) {
                                actions.resumes.append {
                                    if error.isCancellation {
                                        waiter.resume(returning: .userCancelled)
                                    } else {
                                        waiter.resume(throwing: error)
                                    }
                                }
                            } else {
                                broadcast(.failed(productId: productId, error))
                            }
                        case .restored:
                            let value = StoreVerification.verified(Self.transaction(transaction))
                            if state.restores.isEmpty {
                                broadcast(.transaction(value))
                            } else {
                                state.restored.append(value)
                            }
                        }
                    }
                case .restoreFinished:
                    let restored = state.restored
                    let waiters = state.restores
                    state.restored = []
                    state.restores = []
                    let answer: StorefrontRestore = restored.isEmpty ? .nothingToRestore : .restored(restored)
                    actions.resumes.append { for waiter in waiters { waiter.resume(returning: answer) } }
                case .restoreFailed(let code, let message):
                    let waiters = state.restores
                    state.restored = []
                    state.restores = []
                    let error = StoreError(StoreError.Code(skErrorCode: code), message: message)
                    actions.resumes.append { for waiter in waiters { waiter.resume(returning: .failed(error)) } }
                }
                return actions
            }
        }

        /// A purchased or restored transaction as TillClient's value.
        static func transaction(_ transaction: StoreKit1Transaction) -> StoreTransaction {
            StoreTransaction(
                id: transaction.handle,
                transactionId: transaction.transactionIdentifier ?? transaction.handle,
                originalTransactionId: transaction.originalTransactionIdentifier,
                productId: transaction.productIdentifier,
                state: transaction.state == .restored ? .restored : .purchased,
                purchaseDate: transaction.transactionDate ?? Date(),
                quantity: transaction.quantity,
                appAccountToken: transaction.applicationUsername.flatMap(UUID.init(uuidString:)),
                requiresFinish: true
            )
        }

        /// Why a failed transaction failed.
        static func error(_ transaction: StoreKit1Transaction) -> StoreError {
            StoreError(
                StoreError.Code(skErrorCode: transaction.errorCode ?? 0),
                message: transaction.errorMessage ?? "the payment failed"
            )
        }
    }
}
