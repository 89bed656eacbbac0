#if canImport(Combine)
    import Combine
    import Foundation

    /// ``TillModel`` for apps from iOS 15 (Combine's `ObservableObject`): the same state and calls, published with
    /// `@Published`. Use it with `@StateObject` and `@EnvironmentObject`; from iOS 17, ``TillModel`` observes
    /// finer.
    @MainActor
    public final class TillObservableObject: TillSessionModel, ObservableObject, TillCustomerModel {
        /// Everything a view shows; it changes as a whole.
        @Published public private(set) var state = TillState()

        /// A model over a purchase coordinator (see ``TillModel/init(_:configuration:connectivity:)``).
        public override init<Store: TillStorefront>(
            _ purchases: PurchaseCoordinator<Store>,
            configuration: TillModelConfiguration = TillModelConfiguration(),
            connectivity: (any Connectivity)? = TillModelConfiguration.systemConnectivity()
        ) {
            super.init(purchases, configuration: configuration, connectivity: connectivity)
            session.publish = { [weak self] in self?.state = $0 }
        }
    }
#endif
