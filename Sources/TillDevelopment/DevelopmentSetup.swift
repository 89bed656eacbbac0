import Foundation
import TillCatalogue
import TillContract
import TillCore
import TillLedger
import TillServer
import TillSimulator

/// Development mode's starting point: one demo app known to both the simulator and the server (same shared
/// secret, an App Store Server API key), a catalogue of each product type, and a sandbox tester with a device.
public enum DevelopmentSetup {
    public struct Demo: Sendable {
        public var bundleId: String
        public var appKey: String
        public var deviceId: String
        /// The simulator's app (its admin API's id for it).
        public var appAppleId: Int64
        /// The sandbox tester owning the device.
        public var accountId: String
    }

    public static let bundleId = "com.example.till"

    /// The demo app's catalogue on the server, by product id: one product of each type, a second subscription in the
    /// group, and an issue of a magazine. The benchmarks' generator sells from it too.
    public static let catalogue: [(String, CatalogProductInput)] = [
        (
            "gems.100",
            CatalogProductInput(
                type: .consumable,
                title: "100 Gems",
                credits: ["gems": 100],
                price: 990,
                currency: "USD"
            )
        ),
        (
            "pro",
            CatalogProductInput(
                type: .nonConsumable,
                title: "Pro",
                entitlements: ["pro"],
                price: 4990,
                currency: "USD"
            )
        ),
        (
            "premium.monthly",
            CatalogProductInput(
                type: .autoRenewable,
                title: "Premium (monthly)",
                entitlements: ["premium"],
                subscriptionGroup: "premium",
                price: 990,
                currency: "USD"
            )
        ),
        (
            "premium.yearly",
            CatalogProductInput(
                type: .autoRenewable,
                title: "Premium (yearly)",
                entitlements: ["premium"],
                subscriptionGroup: "premium",
                price: 9990,
                currency: "USD"
            )
        ),
        (
            "season.pass",
            CatalogProductInput(
                type: .nonRenewing,
                title: "Season pass",
                entitlements: ["season"],
                durationSeconds: 90 * 86_400,
                price: 2990,
                currency: "USD"
            )
        ),
        (
            "newsletter",
            CatalogProductInput(type: .freeSubscription, title: "Newsletter", entitlements: ["newsletter"])
        ),
        (
            "magazine.1",
            CatalogProductInput(
                type: .nonConsumable,
                title: "Till Monthly, issue 1",
                entitlements: ["magazine.1"],
                price: 1990,
                currency: "USD"
            )
        ),
    ]

    public static func prepare(server: PurchaseServer, simulator: Simulator) async throws -> Demo {
        let simulatorApp: SimApp
        if let existing = try await simulator.appStoreConnect.apps().first(where: { $0.bundleId == bundleId }) {
            simulatorApp = existing
        } else {
            simulatorApp = try await simulator.appStoreConnect.createApp(
                AppInput(bundleId: bundleId, name: "Till Demo")
            )
            let products: [ProductInput] = [
                ProductInput(
                    productId: "gems.100",
                    type: .consumable,
                    price: 990,
                    title: "100 Gems",
                    description: "Spend them in the game"
                ),
                ProductInput(
                    productId: "pro",
                    type: .nonConsumable,
                    price: 4990,
                    title: "Pro",
                    description: "Every feature, for good"
                ),
                ProductInput(
                    productId: "premium.monthly",
                    type: .autoRenewable,
                    subscriptionGroup: "premium",
                    subscriptionPeriod: .oneMonth,
                    price: 990,
                    title: "Premium (monthly)"
                ),
                ProductInput(
                    productId: "premium.yearly",
                    type: .autoRenewable,
                    subscriptionGroup: "premium",
                    subscriptionPeriod: .oneYear,
                    price: 9990,
                    title: "Premium (yearly)"
                ),
                ProductInput(
                    productId: "season.pass",
                    type: .nonRenewing,
                    price: 2990,
                    title: "Season pass",
                    description: "Ninety days"
                ),
                ProductInput(productId: "newsletter", type: .freeSubscription, title: "Newsletter"),
                ProductInput(
                    productId: "magazine.1",
                    type: .nonConsumable,
                    price: 1990,
                    title: "Till Monthly, issue 1",
                    description: "The magazine, delivered by the server"
                ),
            ]
            for product in products {
                _ = try await simulator.appStoreConnect.createProduct(appAppleId: simulatorApp.appAppleId, product)
            }
        }
        let app: ServerApp
        if let existing = try? await server.catalogue.app(bundleId: bundleId) {
            app = existing
        } else {
            let key = try await simulator.appStoreConnect.createAPIKey(appAppleId: simulatorApp.appAppleId)
            app = try await server.catalogue.createApp(
                ServerAppInput(
                    bundleId: bundleId,
                    appAppleId: simulatorApp.appAppleId,
                    name: "Till Demo",
                    sharedSecrets: [simulatorApp.sharedSecret],
                    apiKeyId: key.keyId,
                    apiIssuerId: key.issuerId,
                    apiPrivateKey: key.privateKey
                )
            )
            for (id, input) in Self.catalogue {
                _ = try await server.catalogue.putProduct(bundleId: bundleId, productId: id, input)
            }
        }
        let account: SimAccount
        if let existing = try await simulator.appStoreConnect.accounts().first(where: {
            $0.environment == .sandbox && !$0.deleted
        }) {
            account = existing
        } else {
            account = try await simulator.appStoreConnect.createAccount(
                AccountInput(environment: "Sandbox", email: "tester@example.com")
            )
        }
        var device = try await simulator.appStoreConnect.devices(accountId: account.id).first
        if device == nil {
            device = try await simulator.appStoreConnect.createDevice(
                accountId: account.id,
                DeviceInput(name: "iPhone")
            )
        }
        guard let device else { throw CancellationError() }
        return Demo(
            bundleId: bundleId,
            appKey: app.appKey,
            deviceId: device.id,
            appAppleId: simulatorApp.appAppleId,
            accountId: account.id
        )
    }

    /// Points the demo app's App Store Server Notifications, sandbox and production, at the server listening on
    /// `serverURL`, as its developer sets them in App Store Connect: a renewal, refund or expiry made in the
    /// simulator reaches the server at once, not at its next catch-up. Set at every start, since the server's port
    /// can change between runs of a simulator database that persists.
    public static func sendNotifications(of demo: Demo, to serverURL: String, simulator: Simulator) async throws {
        let url = serverURL + "/v1/apple/notifications"
        _ = try await simulator.appStoreConnect.updateApp(
            appAppleId: demo.appAppleId,
            AppPatch(notificationUrlProduction: url, notificationUrlSandbox: url)
        )
    }
}
