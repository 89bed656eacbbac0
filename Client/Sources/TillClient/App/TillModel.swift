import Foundation
import Observation

/// The customer as SwiftUI views see it, observable (iOS 17, macOS 14, tvOS 17, watchOS 10, visionOS 1): the
/// entitlements and balances of the verified snapshot, the products, the purchase in progress. A view writes
/// `if till.isActive("pro")`, and updates when it changes.
///
/// ```swift
/// @State private var till = TillModel(purchases)
/// …
/// ContentView().environment(till).task { await till.start() }.tillLifecycle(till)
/// ```
///
/// The outbox is sent again at launch, when the app comes back to the foreground (``sceneBecameActive()``,
/// called by `tillLifecycle`), and when the network comes back (``Connectivity``, `NWPathMonitor` by default on
/// Apple platforms). Offline, the stored snapshot keeps entitlements working for
/// ``TillModelConfiguration/maximumOfflineAge`` after the server signed it; then ``state`` says it is stale and
/// grants nothing from it. Before iOS 17, use ``TillObservableObject``, the same model for Combine.
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
@Observable
public final class TillModel: TillSessionModel, TillCustomerModel {
    /// Everything a view shows; it changes as a whole.
    public private(set) var state = TillState()

    /// A model over a purchase coordinator.
    ///
    /// - Parameters:
    ///   - connectivity: what tells the model the network came back; on Apple platforms `NWPathMonitor`
    ///     (``NetworkConnectivity``) by default, elsewhere none.
    public override init<Store: TillStorefront>(
        _ purchases: PurchaseCoordinator<Store>,
        configuration: TillModelConfiguration = TillModelConfiguration(),
        connectivity: (any Connectivity)? = TillModelConfiguration.systemConnectivity()
    ) {
        super.init(purchases, configuration: configuration, connectivity: connectivity)
        session.publish = { [weak self] in self?.state = $0 }
    }
}

extension TillModelConfiguration {
    /// The network watch the SwiftUI models use unless given another: `NWPathMonitor` where the Network framework
    /// is (Apple platforms), none elsewhere.
    public static func systemConnectivity() -> (any Connectivity)? {
        #if canImport(Network)
            NetworkConnectivity()
        #else
            nil
        #endif
    }
}
