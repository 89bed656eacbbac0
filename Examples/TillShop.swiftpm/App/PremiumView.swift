import StoreKit
import SwiftUI
import TillClient

/// The subscription screen: Apple's `SubscriptionStoreView` sells the plans; each purchase it makes is handed to
/// Till (`tillPurchaseCompletion`), which records it with the server, delivers it and finishes it.
struct PremiumView: View {
    @Environment(TillModel.self) private var till

    var body: some View {
        SubscriptionStoreView(productIDs: ["premium.monthly", "premium.yearly"])
            .tillPurchaseCompletion(till)
            .navigationTitle(till.isActive("premium") ? "Premium is active" : "Premium")
    }
}
