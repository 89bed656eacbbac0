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
public final class TillModel: TillCustomerModel {
    /// Everything a view shows; it changes as a whole.
    public private(set) var state = TillState()
    @ObservationIgnored let session: TillSession

    /// A model over a purchase coordinator.
    ///
    /// - Parameters:
    ///   - connectivity: what tells the model the network came back; on Apple platforms `NWPathMonitor`
    ///     (``NetworkConnectivity``) by default, elsewhere none.
    public init<Store: TillStorefront>(
        _ purchases: PurchaseCoordinator<Store>,
        configuration: TillModelConfiguration = TillModelConfiguration(),
        connectivity: (any Connectivity)? = TillModelConfiguration.systemConnectivity()
    ) {
        session = TillSession(engine: purchases, configuration: configuration, connectivity: connectivity)
        session.publish = { [weak self] in self?.state = $0 }
    }

    init(session: TillSession) {
        self.session = session
        session.publish = { [weak self] in self?.state = $0 }
    }

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
    public func record(_ result: Result<StorePurchaseResult, StoreError>, productId: String) async -> PurchaseOutcome {
        await session.record(result, productId: productId)
    }

    @discardableResult
    public func restore() async -> RestoreOutcome { await session.restore() }

    /// The products again.
    public func refreshProducts() async { await session.refreshProducts() }

    public func sceneBecameActive() async { await session.sceneBecameActive() }
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
