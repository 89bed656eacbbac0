/// The calls of the SwiftUI customer model, whichever face it has: ``TillModel`` (Observation, iOS 17) and
/// ``TillObservableObject`` (Combine, iOS 15) are this class, each adding only how it publishes ``TillState`` to
/// views. It drives one coordinator through a `TillSession`. Make one of the two faces; this class has no public
/// initializer.
@MainActor
public class TillSessionModel {
    let session: TillSession

    init<Store: TillStorefront>(
        _ purchases: PurchaseCoordinator<Store>,
        configuration: TillModelConfiguration,
        connectivity: (any Connectivity)?
    ) {
        session = TillSession(engine: purchases, configuration: configuration, connectivity: connectivity)
    }

    /// Launch: the stored snapshot, the outbox, unfinished transactions, the products, the store's current
    /// entitlements; then the background work until ``stop()``. A second call does nothing.
    public func start() async { await session.start() }

    /// Stops the background work.
    public func stop() { session.stop() }

    /// Buys; the outcome also lands in the model's state. Nil when the store could not be reached.
    @discardableResult
    public func purchase(_ payment: Payment) async -> PurchaseOutcome? { await session.purchase(payment) }

    /// Records a transaction the app's own StoreKit code made.
    @discardableResult
    public func record(_ transaction: StoreVerification<StoreTransaction>) async -> PurchaseOutcome {
        await session.record(transaction)
    }

    /// Records the result of a purchase the app made itself; a refusal (`failure`) is only reported.
    @discardableResult
    public func record(_ result: Result<StorePurchaseResult, StoreError>, productId: String) async -> PurchaseOutcome {
        await session.record(result, productId: productId)
    }

    /// "Restore Purchases".
    @discardableResult
    public func restore() async -> RestoreOutcome { await session.restore() }

    /// The products again.
    public func refreshProducts() async { await session.refreshProducts() }

    /// The app came back to the foreground: sends the outbox, refreshes the snapshot, delivers what waits.
    public func sceneBecameActive() async { await session.sceneBecameActive() }
}
