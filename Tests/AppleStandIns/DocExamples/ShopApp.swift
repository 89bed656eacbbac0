// The Swift examples of docs/client.md and docs/offers.md, each verbatim (check.py fails when one is not found
// here line for line), with what they leave to the reader declared around them. check.py compiles this folder
// against TillClient and the stand-ins, as it compiles the example app: a doc example that stops compiling fails
// AppleSourcesTests.

// docs/client.md, "StoreKit 2 and SwiftUI":
import Foundation
import SwiftUI
import TillClient

@main
struct ShopApp: App {
    @State private var till = TillModel(try! PurchaseCoordinator(     // iOS 17; before: TillObservableObject
        storefront: StoreKit2Storefront(),
        server: TillServerClient(baseURL: "https://till.example.com", appKey: "tk_…"),
        bundleId: "com.example.shop", customerId: accountId,          // your account id, or a guest id
        directory: FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0]
            .appendingPathComponent("till")))

    var body: some Scene {
        WindowGroup {
            ShopView().environment(till).task { await till.start() }.tillLifecycle(till)
        }
    }
}
// In a view: `if till.isActive("pro")`, `till.balance(of: "gems")`, `await till.purchase("gems.100")`,
// `till.products`, `await till.restore()`.
