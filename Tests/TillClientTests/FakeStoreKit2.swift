import Foundation
import Synchronization
import TillClient

/// StoreKit 2 played by a test, behind ``StoreKit2Storefront``: by default each call answers as StoreKit would,
/// from the simulator's device (its signed transactions are what the server then verifies); a test scripts the next
/// purchase's outcome (cancelled, pending, refused, unverified), a failing `AppStore.sync()`, and what
/// `Transaction.updates` emits.
final class FakeStoreKit2: StoreKit2Interface, Sendable {
    typealias Transaction = StoreTransaction

    /// What the next `purchase(options:)` does.
    enum Script: Sendable {
        /// Asks the simulator, as StoreKit asks the App Store.
        case store
        case userCancelled
        case pending
        /// Throws, as StoreKit throws `StoreKitError` or `Product.PurchaseError`.
        case refuse(StoreError)
        /// Buys from the simulator, and says the JWS did not verify on the device.
        case unverified(StoreVerificationError)
    }

    private struct State {
        var script: Script = .store
        var syncError: StoreError?
        var purchaseOptions: [[StoreKit2PurchaseOption]] = []
        var finished: [String] = []
        var appTransactionReads = 0
        var updates: [AsyncStream<StoreKit2Signed<StoreTransaction>>.Continuation] = []
    }

    /// The App Store the fake asks: the simulator's device.
    let device: SimulatorStorefront
    private let state = Mutex(State())

    init(device: SimulatorStorefront) {
        self.device = device
    }

    // MARK: What a test does

    func script(_ script: Script) { state.withLock { $0.script = script } }
    func failSync(_ error: StoreError?) { state.withLock { $0.syncError = error } }
    var purchaseOptions: [[StoreKit2PurchaseOption]] { state.withLock { $0.purchaseOptions } }
    var finished: [String] { state.withLock { $0.finished } }
    var appTransactionReads: Int { state.withLock { $0.appTransactionReads } }

    /// StoreKit hands `transaction` to `Transaction.updates` (a renewal, an approval, a refund, a family purchase).
    func emit(_ transaction: StoreVerification<StoreTransaction>) {
        let signed = StoreKit2Signed(transaction: transaction.unsafePayloadValue, value: transaction)
        for continuation in state.withLock({ $0.updates }) { continuation.yield(signed) }
    }

    /// Whether something iterates `Transaction.updates`.
    var isObserved: Bool { state.withLock { !$0.updates.isEmpty } }

    // MARK: StoreKit2Interface

    func canMakePayments() async -> Bool { (try? await device.canMakePayments()) ?? false }

    func products(for identifiers: [String]) async throws -> [StoreProduct] {
        try await device.products(identifiers).products
    }

    func purchase(productId: String, options: [StoreKit2PurchaseOption]) async throws
        -> StoreKit2PurchaseResult<StoreTransaction>
    {
        let script = state.withLock { state in
            state.purchaseOptions.append(options)
            defer { state.script = .store }
            return state.script
        }
        switch script {
        case .userCancelled: return .userCancelled
        case .pending: return .pending
        case .refuse(let error): throw error
        case .store, .unverified: break
        }
        switch try await device.purchase(Self.payment(productId: productId, options: options)) {
        case .success(let verification):
            var value = verification
            if case .unverified(let error) = script { value = .unverified(verification.unsafePayloadValue, error) }
            return .success(StoreKit2Signed(transaction: value.unsafePayloadValue, value: value))
        case .userCancelled:
            return .userCancelled
        case .pending:
            return .pending
        }
    }

    /// The payment StoreKit 2's options stand for, as the simulator takes it.
    static func payment(productId: String, options: [StoreKit2PurchaseOption]) -> Payment {
        var payment = Payment(productId: productId)
        for option in options {
            switch option {
            case .quantity(let quantity): payment.quantity = quantity
            case .appAccountToken(let token): payment.appAccountToken = token
            case .promotionalOffer(let offerID, let keyID, let nonce, let signature, let timestamp):
                payment.promotionalOffer = PromotionalOffer(
                    offerIdentifier: offerID,
                    keyIdentifier: keyID,
                    nonce: nonce,
                    timestamp: Int64(timestamp),
                    signature: signature.base64EncodedString()
                )
            case .promotionalOfferJWS(let offerID, let compactJWS):
                payment.promotionalOffer = PromotionalOffer(offerIdentifier: offerID, compactJWS: compactJWS)
            case .introductoryOfferEligibility(let compactJWS): payment.introductoryOfferEligibility = compactJWS
            case .winBackOffer(let offerID): payment.winBackOfferId = offerID
            }
        }
        return payment
    }

    func updates() -> AsyncStream<StoreKit2Signed<StoreTransaction>> {
        let (stream, continuation) = AsyncStream.makeStream(of: StoreKit2Signed<StoreTransaction>.self)
        state.withLock { $0.updates.append(continuation) }
        return stream
    }

    /// `Transaction.unfinished`: the device's purchased entries (StoreKit 2 never shows failed payments).
    func unfinished() async -> [StoreKit2Signed<StoreTransaction>] {
        let updates = (try? await device.unfinishedTransactions()) ?? []
        return updates.compactMap { update in
            guard case .transaction(let verification) = update else { return nil }
            return StoreKit2Signed(transaction: verification.unsafePayloadValue, value: verification)
        }
    }

    func currentEntitlements() async -> [StoreKit2Signed<StoreTransaction>] {
        ((try? await device.currentEntitlements()) ?? []).map {
            StoreKit2Signed(transaction: $0.unsafePayloadValue, value: $0)
        }
    }

    func finish(_ transaction: StoreTransaction) async {
        state.withLock { $0.finished.append(transaction.transactionId) }
        if transaction.requiresFinish { try? await device.finish(transaction) }
    }

    func sync() async throws {
        if let error = state.withLock({ $0.syncError }) { throw error }
    }

    func appTransaction() async throws -> StoreVerification<StoreAppTransaction>? {
        state.withLock { $0.appTransactionReads += 1 }
        return try await device.appTransaction()
    }

    func subscriptionStatuses(groupId: String) async throws -> [StoreSubscriptionStatus] {
        try await device.subscriptionStatuses(groupId: groupId)
    }

    func appReceipt() async throws -> Data? {
        try await device.appReceipt().flatMap { Data(base64Encoded: $0) }
    }
}
