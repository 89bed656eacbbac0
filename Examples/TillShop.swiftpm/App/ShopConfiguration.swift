import Foundation
import TillClient

/// Where the shop's server is, and who the customer is. `till serve` prints the development app's key
/// (`com.example.till`, the bundle id of this app); the products of `TillShop.storekit` are that app's.
enum ShopConfiguration {
    static let serverURL = "http://127.0.0.1:8080"
    static let appKey = "tk_…"
    static let bundleId = "com.example.till"

    /// The customer: your account id once signed in; until then a guest id kept on the device.
    static var customerId: String {
        let defaults = UserDefaults.standard
        if let id = defaults.string(forKey: "till.customerId") { return id }
        let id = "guest-" + UUID().uuidString
        defaults.set(id, forKey: "till.customerId")
        return id
    }

    /// The model the views read: TillClient's coordinator over StoreKit 2, keeping its outbox, signed snapshot and
    /// files in Application Support.
    @MainActor
    static func model() -> TillModel {
        let server = TillServerClient(baseURL: serverURL, appKey: appKey)
        let applicationSupport = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0]
        let directory = applicationSupport.appendingPathComponent("till", isDirectory: true)
        do {
            let purchases = try PurchaseCoordinator(
                storefront: StoreKit2Storefront(),
                server: server,
                bundleId: bundleId,
                customerId: customerId,
                directory: directory
            )
            return TillModel(purchases)
        } catch {
            fatalError("Till cannot keep its files in \(directory.path): \(error)")
        }
    }
}
