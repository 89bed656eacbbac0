import SwiftUI
import TillClient

/// A small shop on StoreKit 2 and Till: a custom product list (``ShopView``) and a subscription screen built on
/// Apple's `SubscriptionStoreView` (``PremiumView``). What the customer has comes from the server's signed snapshot
/// (`till.isActive`, `till.balance`), never from StoreKit alone.
@main
struct TillShopApp: App {
    @State private var till = ShopConfiguration.model()

    var body: some Scene {
        WindowGroup {
            ShopView()
                .environment(till)
                // Launch: the stored snapshot, the outbox, unfinished transactions, Transaction.updates.
                .task { await till.start() }
                // Back in the foreground: the outbox again, a fresh snapshot.
                .tillLifecycle(till)
        }
    }
}
