import Foundation

/// The storefront over StoreKit 2: products with their offers and eligibility, `purchase(options:)` with the
/// customer's `appAccountToken` and signed offers, the verified `jwsRepresentation` of each transaction,
/// `Transaction.updates` and `Transaction.unfinished`, `AppStore.sync()` then `Transaction.currentEntitlements` to
/// restore, the AppTransaction and subscription statuses.
///
/// Generic over ``StoreKit2Interface``: on Apple platforms `StoreKit2Storefront()` runs on Apple's StoreKit
/// (``SystemStoreKit2``); tests run the same code on a fake. It keeps each StoreKit transaction it handed out until
/// it is finished, so that ``finish(_:)`` finishes exactly that one.
public struct StoreKit2Storefront<Kit: StoreKit2Interface>: TillStorefront {
    public let kit: Kit
    private let handles = Locked<[String: Kit.Transaction]>([:])

    public init(kit: Kit) {
        self.kit = kit
    }

    public func canMakePayments() async throws -> Bool { await kit.canMakePayments() }

    public func products(_ identifiers: [String]) async throws -> ProductLookup {
        let products = try await kit.products(for: identifiers)
        let found = Set(products.map(\.id))
        var invalid: [String] = []
        for id in identifiers where !found.contains(id) && !invalid.contains(id) { invalid.append(id) }
        let order = Dictionary(identifiers.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        return ProductLookup(
            products: products.sorted { (order[$0.id] ?? .max) < (order[$1.id] ?? .max) },
            invalidProductIds: invalid
        )
    }

    public func purchase(_ payment: Payment) async throws -> StorePurchaseResult {
        let options = try Self.options(for: payment)
        switch try await kit.purchase(productId: payment.productId, options: options) {
        case .success(let signed):
            keep(signed)
            return .success(signed.value)
        case .userCancelled:
            return .userCancelled
        case .pending:
            return .pending(PendingPurchase(productId: payment.productId, quantity: payment.quantity))
        }
    }

    /// The purchase options a payment stands for. A malformed original signature is refused here as StoreKit
    /// would refuse it (`invalidOfferSignature`), without asking the store.
    static func options(for payment: Payment) throws -> [StoreKit2PurchaseOption] {
        var options: [StoreKit2PurchaseOption] = []
        if payment.quantity != 1 { options.append(.quantity(payment.quantity)) }
        if let token = payment.appAccountToken { options.append(.appAccountToken(token)) }
        if let offer = payment.promotionalOffer {
            switch offer.signature {
            case .original(let keyIdentifier, let nonce, let timestamp, let signature):
                guard let bytes = Data(base64Encoded: signature) else {
                    throw StoreError(.invalidOfferSignature, message: "the offer's signature is not base64")
                }
                options.append(
                    .promotionalOffer(
                        offerID: offer.offerIdentifier,
                        keyID: keyIdentifier,
                        nonce: nonce,
                        signature: bytes,
                        timestamp: Int(timestamp)
                    )
                )
            case .compactJWS(let jws):
                options.append(.promotionalOfferJWS(offerID: offer.offerIdentifier, compactJWS: jws))
            }
        }
        if let jws = payment.introductoryOfferEligibility {
            options.append(.introductoryOfferEligibility(compactJWS: jws))
        }
        if let offerID = payment.winBackOfferId { options.append(.winBackOffer(offerID: offerID)) }
        return options
    }

    public func unfinishedTransactions() async throws -> [StoreUpdate] {
        await kit.unfinished().map { signed in
            keep(signed)
            return .transaction(signed.value)
        }
    }

    /// `Transaction.updates`: StoreKit hands unfinished transactions to it once at launch, then everything that
    /// happens while the app runs.
    public func transactionUpdates() -> AsyncStream<StoreUpdate> {
        let source = kit.updates()
        let storefront = self
        return AsyncStream { continuation in
            let task = Task {
                for await signed in source {
                    storefront.keep(signed)
                    continuation.yield(.transaction(signed.value))
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Finishes the StoreKit transaction `transaction` stands for. One handed out by another storefront (an earlier
    /// launch) is looked for among the unfinished; one that is not there was finished already.
    public func finish(_ transaction: StoreTransaction) async throws {
        var handle = handles.withLock { $0[transaction.id] }
        if handle == nil {
            for signed in await kit.unfinished() where signed.value.unsafePayloadValue.id == transaction.id {
                handle = signed.transaction
            }
        }
        guard let handle else { return }
        await kit.finish(handle)
        _ = handles.withLock { $0.removeValue(forKey: transaction.id) }
    }

    /// `AppStore.sync()` (which may ask the customer to sign in), then the current entitlements as restored
    /// transactions.
    public func restorePurchases() async throws -> StorefrontRestore {
        do {
            try await kit.sync()
        } catch let error as StoreError {
            return .failed(error)
        }
        let restored = await kit.currentEntitlements().map { signed in
            signed.value.map { transaction in
                var transaction = transaction
                transaction.state = .restored
                transaction.requiresFinish = false
                return transaction
            }
        }
        return restored.isEmpty ? .nothingToRestore : .restored(restored)
    }

    public func currentEntitlements() async throws -> [StoreVerification<StoreTransaction>] {
        await kit.currentEntitlements().map { signed in
            signed.value.map { transaction in
                var transaction = transaction
                transaction.requiresFinish = false
                return transaction
            }
        }
    }

    public func appReceipt() async throws -> String? {
        try await kit.appReceipt().map { $0.base64EncodedString() }
    }

    public func appTransaction() async throws -> StoreVerification<StoreAppTransaction>? {
        try await kit.appTransaction()
    }

    public func subscriptionStatuses(groupId: String) async throws -> [StoreSubscriptionStatus] {
        try await kit.subscriptionStatuses(groupId: groupId)
    }

    /// Keeps StoreKit's transaction until it is finished.
    func keep(_ signed: StoreKit2Signed<Kit.Transaction>) {
        let id = signed.value.unsafePayloadValue.id
        handles.withLock { $0[id] = signed.transaction }
    }
}
