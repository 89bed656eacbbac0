import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Testing
import TillAppStore
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// A simulator on a loopback port standing in for Apple, and a verification server (with its confirmation
/// worker running) that trusts the simulator's roots for the sandbox.
struct ServerFixture {
    let simulator: Simulator
    let server: PurchaseServer
    let app: ServerApp
    let device: SimDevice
    let account: SimAccount

    static let bundleId = "com.example.till"

    /// Runs `body` with the simulator listening and the server's worker confirming (unless not `confirming`: the
    /// queue then only fills), the server on `database` (SQLite in memory or, `persistent`, in a file of its own; or a
    /// fresh PostgreSQL database).
    static func run(
        database engine: TestDatabase = .sqlite,
        confirmation: ConfirmationSettings = .init(backoffBase: .milliseconds(50), backoffCap: .seconds(1)),
        restorePolicy: RestorePolicy = .keepWithFirstOwner,
        followSimulatorClock: Bool = false,
        persistent: Bool = false,
        confirming: Bool = true,
        configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: (ServerFixture) async throws -> Void
    ) async throws {
        // SQLite in memory unless the test opens a second server on the same database (`persistent`: a file).
        let database =
            engine == .sqlite && !persistent ? .sqliteInMemory : try await engine.fresh(prefix: "till_srv")
        let simulator = try await Simulator.open(SimulatorConfiguration(keys: .shared))
        let simApp = try await simulator.appStoreConnect.createApp(
            AppInput(appAppleId: 1_234_567_890, bundleId: bundleId, sharedSecret: "s3cret")
        )
        for input in [
            ProductInput(productId: "gems.100", type: .consumable, price: 990),
            ProductInput(productId: "pro", type: .nonConsumable, price: 4990),
            ProductInput(
                productId: "premium.monthly",
                type: .autoRenewable,
                subscriptionGroup: "premium",
                subscriptionPeriod: .oneMonth,
                price: 990
            ),
            ProductInput(productId: "issue.1", type: .nonRenewing, price: 2990),
        ] {
            _ = try await simulator.appStoreConnect.createProduct(appAppleId: simApp.appAppleId, input)
        }
        let key = try await simulator.appStoreConnect.createAPIKey(appAppleId: simApp.appAppleId)
        let account = try await simulator.appStoreConnect.createAccount(AccountInput(environment: "Sandbox"))
        let device = try await simulator.appStoreConnect.createDevice(accountId: account.id, DeviceInput())

        // Following the simulator's clock, the server sees periods end when the simulated App Store does.
        let clock = simulator.clock
        let now: @Sendable () -> Date
        if followSimulatorClock { now = { clock.now() } } else { now = { Date() } }
        try await withServices({ buildSimulatorApplication(simulator, port: 0, onServerRunning: $0) }) { port in
            var configuration = ServerConfiguration(
                database: database,
                operatorToken: "operator",
                apple: .simulator("http://127.0.0.1:\(port)"),
                sandboxJWSRoots: [simulator.signer.jwsAuthority.root],
                sandboxReceiptRoots: [simulator.signer.receiptAuthority.root],
                sandboxReceiptIntermediates: [simulator.signer.receiptAuthority.intermediate],
                confirmation: confirmation
            )
            configure(&configuration)
            let server = try await PurchaseServer.open(configuration, now: now)
            let app = try await server.catalogue.createApp(
                ServerAppInput(
                    bundleId: bundleId,
                    appAppleId: simApp.appAppleId,
                    sharedSecrets: ["s3cret"],
                    apiKeyId: key.keyId,
                    apiIssuerId: key.issuerId,
                    apiPrivateKey: key.privateKey,
                    restorePolicy: restorePolicy
                )
            )
            _ = try await server.catalogue.putProduct(
                bundleId: bundleId,
                productId: "gems.100",
                CatalogProductInput(type: .consumable, credits: ["gems": 100], price: 990, currency: "USD")
            )
            _ = try await server.catalogue.putProduct(
                bundleId: bundleId,
                productId: "pro",
                CatalogProductInput(type: .nonConsumable, entitlements: ["pro"])
            )
            _ = try await server.catalogue.putProduct(
                bundleId: bundleId,
                productId: "premium.monthly",
                CatalogProductInput(type: .autoRenewable, entitlements: ["premium"], subscriptionGroup: "premium")
            )
            _ = try await server.catalogue.putProduct(
                bundleId: bundleId,
                productId: "issue.1",
                CatalogProductInput(type: .nonRenewing, entitlements: ["issue-1"], durationSeconds: 86_400)
            )
            let fixture = ServerFixture(
                simulator: simulator,
                server: server,
                app: app,
                device: device,
                account: account
            )
            if confirming {
                try await withServices({ _ in ServiceBox(ConfirmationWorker(server: server)) }) { _ in
                    try await body(fixture)
                }
            } else {
                try await body(fixture)
            }
            try await server.shutdown()
        }
        try await simulator.shutdown()
    }

    func buy(_ productId: String, quantity: Int? = nil) async throws -> QueueTransaction {
        try await simulator.payments.addPayment(
            PaymentRequest(deviceId: device.id, bundleId: Self.bundleId, productId: productId, quantity: quantity),
            environment: .sandbox
        )
    }

    /// A device of a new account of StoreKit Testing in Xcode (the simulator's Xcode environment).
    func xcodeDevice() async throws -> SimDevice {
        let account = try await simulator.appStoreConnect.createAccount(AccountInput(environment: "Xcode"))
        return try await simulator.appStoreConnect.createDevice(accountId: account.id, DeviceInput(name: "Simulator"))
    }

    func receipt() async throws -> String {
        Base64.encode(
            try await simulator.payments.appReceipt(deviceId: device.id, bundleId: Self.bundleId, environment: .sandbox)
        )
    }

    func settled(_ result: SubmissionResult, timeout: Duration = .seconds(60)) async throws -> SubmissionView {
        try await server.intake.waitForSettlement(id: result.submission.id, bundleId: Self.bundleId, timeout: timeout)
    }
}

/// A JWS's payload with `change` applied, signed again by `signer`: signed data as someone else (or the same
/// authority) would have signed it.
func resigned(_ jws: String, by signer: JWSSigner, _ change: (inout [String: Any]) -> Void = { _ in }) throws
    -> String
{
    let payload = try #require(Base64.decode(jws.split(separator: ".")[1], alphabet: .url))
    var object = try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
    change(&object)
    return try signer.sign(payloadJSON: Array(try JSONSerialization.data(withJSONObject: object)))
}
