/// What SwiftUI views use of the customer model, whichever face it has: ``TillModel`` (Observation, iOS 17) or
/// ``TillObservableObject`` (Combine, iOS 15). TillClient's view modifiers (`tillLifecycle`,
/// `tillPurchaseCompletion`, the store sheets) take either.
@MainActor
public protocol TillCustomerModel: AnyObject, Sendable {
    /// Everything a view shows; it changes as a whole.
    var state: TillState { get }
    /// Launch (see ``TillModel/start()``).
    func start() async
    /// Buys; the outcome also lands in ``state``. Nil when the store could not be reached.
    func purchase(_ payment: Payment) async -> PurchaseOutcome?
    /// Records a transaction the app's own StoreKit code made.
    func record(_ transaction: StoreVerification<StoreTransaction>) async -> PurchaseOutcome
    /// Records the result of a purchase the app made itself; a refusal (`failure`) is only reported.
    func record(_ result: Result<StorePurchaseResult, StoreError>, productId: String) async -> PurchaseOutcome
    /// "Restore Purchases".
    func restore() async -> RestoreOutcome
    /// The app came back to the foreground: sends the outbox, refreshes the snapshot, delivers what waits.
    func sceneBecameActive() async
}

extension TillCustomerModel {
    /// Whether the customer has `entitlement` now (granted by a fresh enough verified snapshot, not expired).
    public func isActive(_ entitlement: String) -> Bool { state.isActive(entitlement) }

    /// Credits of `name` left.
    public func balance(of name: String) -> Int64 { state.balance(of: name) }

    /// The products on sale, with the store's prices.
    public var products: [OfferedProduct] { state.products }

    /// Buys `quantity` of `productId`.
    @discardableResult
    public func purchase(_ productId: String, quantity: Int = 1) async -> PurchaseOutcome? {
        await purchase(Payment(productId: productId, quantity: quantity))
    }
}
