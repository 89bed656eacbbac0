import Foundation
import TillCore
import TillFormats
import TillTestSupport

@testable import TillSimulator

/// A simulator with one app and one product of each type, and a sandbox tester with two devices.
struct SimulatorFixture {
    let simulator: Simulator
    let app: SimApp
    let account: SimAccount
    let phone: SimDevice
    let tablet: SimDevice

    static let bundleId = "com.example.till"

    /// The realtime deadline of tests: a developer's realtime URL in a test is a server of the same test process,
    /// which on a loaded machine answers late; the real deadline (700 ms) has tests of its own
    /// (`RetentionDeadlineTests`), with receivers slower than it on purpose.
    static let generousRealtimeDeadline: Duration = .seconds(30)

    /// The simulator on `database` (SQLite in memory, or a fresh PostgreSQL database), whatever `configuration`
    /// says of it, with `realtimeDeadline` for Retention Messaging's realtime calls.
    static func make(
        _ configuration: SimulatorConfiguration = .init(),
        database engine: TestDatabase = .sqlite,
        environment: AppStoreEnvironment = .sandbox,
        gracePeriodDays: Int = 0,
        realtimeDeadline: Duration = generousRealtimeDeadline
    ) async throws -> SimulatorFixture {
        var configuration = configuration
        configuration.realtimeTimeout = realtimeDeadline
        // One set of signing keys for every new database of the tests (SimulatorKeys: making them costs CPU).
        if configuration.keys == nil { configuration.keys = try SimulatorKeys.shared }
        if engine == .postgres { configuration.database = try await engine.fresh(prefix: "till_sim") }
        let simulator = try await Simulator.open(configuration)
        let app = try await simulator.appStoreConnect.createApp(
            AppInput(
                appAppleId: 1_234_567_890,
                bundleId: bundleId,
                sharedSecret: "secret-1",
                gracePeriodDays: gracePeriodDays
            )
        )
        let products: [ProductInput] = [
            ProductInput(
                productId: "gems.100",
                type: .consumable,
                price: 990,
                title: "100 Gems",
                description: "A pile of gems"
            ),
            ProductInput(productId: "pro", type: .nonConsumable, price: 4990, title: "Pro"),
            ProductInput(productId: "issue.1", type: .nonRenewing, price: 2990),
            ProductInput(productId: "newsletter", type: .freeSubscription),
            ProductInput(
                productId: "premium.monthly",
                type: .autoRenewable,
                subscriptionGroup: "premium",
                subscriptionPeriod: .oneMonth,
                groupLevel: 2,
                price: 990
            ),
            ProductInput(
                productId: "premium.yearly",
                type: .autoRenewable,
                subscriptionGroup: "premium",
                subscriptionPeriod: .oneYear,
                groupLevel: 2,
                price: 9990
            ),
            ProductInput(
                productId: "premium.plus.monthly",
                type: .autoRenewable,
                subscriptionGroup: "premium",
                subscriptionPeriod: .oneMonth,
                groupLevel: 1,
                price: 1990
            ),
            ProductInput(
                productId: "basic.monthly",
                type: .autoRenewable,
                subscriptionGroup: "premium",
                subscriptionPeriod: .oneMonth,
                groupLevel: 3,
                price: 490
            ),
        ]
        for product in products {
            _ = try await simulator.appStoreConnect.createProduct(appAppleId: app.appAppleId, product)
        }
        let account = try await simulator.appStoreConnect.createAccount(AccountInput(environment: environment.rawValue))
        let phone = try await simulator.appStoreConnect.createDevice(accountId: account.id, DeviceInput(name: "iPhone"))
        let tablet = try await simulator.appStoreConnect.createDevice(accountId: account.id, DeviceInput(name: "iPad"))
        return SimulatorFixture(simulator: simulator, app: app, account: account, phone: phone, tablet: tablet)
    }

    var environment: AppStoreEnvironment { account.environment }

    /// The app's sandbox notifications so far, oldest first, as `TYPE/SUBTYPE`.
    func notificationKinds() async throws -> [String] {
        try await simulator.store.notifications.notifications(
            appAppleId: app.appAppleId,
            environment: .sandbox,
            from: 0,
            to: Int64.max,
            on: simulator.store.sql
        ).map { [$0.notificationType, $0.subtype].compactMap { $0 }.joined(separator: "/") }
    }

    func buy(_ productId: String, on device: SimDevice? = nil, quantity: Int? = nil, userAction: String? = nil)
        async throws -> QueueTransaction
    {
        try await simulator.payments.addPayment(
            PaymentRequest(
                deviceId: (device ?? phone).id,
                bundleId: Self.bundleId,
                productId: productId,
                quantity: quantity,
                userAction: userAction
            ),
            environment: environment
        )
    }

    var jwsVerifier: SignedDataVerifier {
        SignedDataVerifier(
            .init(anchors: simulator.signer.jwsAuthority.anchors, bundleId: Self.bundleId, environment: environment)
        )
    }

    var receiptVerifier: ReceiptVerifier {
        ReceiptVerifier(
            .init(anchors: simulator.signer.receiptAuthority.anchors, bundleId: Self.bundleId, environment: environment)
        )
    }

    func receipt(on device: SimDevice? = nil) async throws -> AppReceipt {
        let der = try await simulator.payments.appReceipt(
            deviceId: (device ?? phone).id,
            bundleId: Self.bundleId,
            environment: environment
        )
        guard case .valid(let verified) = await receiptVerifier.verify(der: der) else {
            throw FixtureError.invalidReceipt
        }
        return verified.receipt
    }

    enum FixtureError: Error { case invalidReceipt }
}
