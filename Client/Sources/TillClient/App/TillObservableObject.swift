#if canImport(Combine)
    import Combine
    import Foundation

    /// ``TillModel`` for apps from iOS 15 (Combine's `ObservableObject`): the same state and calls, published with
    /// `@Published`. Use it with `@StateObject` and `@EnvironmentObject`; from iOS 17, ``TillModel`` observes
    /// finer.
    @MainActor
    public final class TillObservableObject: ObservableObject, TillCustomerModel {
        /// Everything a view shows; it changes as a whole.
        @Published public private(set) var state = TillState()
        let session: TillSession

        public init<Store: TillStorefront>(
            _ purchases: PurchaseCoordinator<Store>,
            configuration: TillModelConfiguration = TillModelConfiguration(),
            connectivity: (any Connectivity)? = TillModelConfiguration.systemConnectivity()
        ) {
            session = TillSession(engine: purchases, configuration: configuration, connectivity: connectivity)
            session.publish = { [weak self] in self?.state = $0 }
        }

        /// Launch (see ``TillModel/start()``).
        public func start() async { await session.start() }

        /// Stops the background work.
        public func stop() { session.stop() }

        @discardableResult
        public func purchase(_ payment: Payment) async -> PurchaseOutcome? { await session.purchase(payment) }

        @discardableResult
        public func record(_ transaction: StoreVerification<StoreTransaction>) async -> PurchaseOutcome {
            await session.record(transaction)
        }

        @discardableResult
        public func record(_ result: Result<StorePurchaseResult, StoreError>, productId: String) async
            -> PurchaseOutcome
        {
            await session.record(result, productId: productId)
        }

        @discardableResult
        public func restore() async -> RestoreOutcome { await session.restore() }

        public func refreshProducts() async { await session.refreshProducts() }

        public func sceneBecameActive() async { await session.sceneBecameActive() }
    }
#endif
