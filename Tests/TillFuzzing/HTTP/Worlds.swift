import Foundation
import Logging
import TillAppStore
import TillCatalogue
import TillContract
import TillCore
import TillDevelopment
import TillFormats
import TillLedger
import TillServer
import TillSimulator

/// A world the HTTP targets send requests into, opened once and used for many inputs; every `recycleEvery` inputs
/// it is closed and opened again, so that what valid inputs store (submissions, notifications, apps) does not grow
/// without bound over a million executions. Replays (`swift test`) use a fresh world per input.
actor Recycled<World: Sendable> {
    private let open: @Sendable () async throws -> World
    private let close: @Sendable (World) async -> Void
    private let recycleEvery: Int
    private var world: World?
    private var uses = 0

    init(
        recycleEvery: Int,
        open: @escaping @Sendable () async throws -> World,
        close: @escaping @Sendable (World) async -> Void
    ) {
        self.recycleEvery = recycleEvery
        self.open = open
        self.close = close
    }

    func get() async throws -> World {
        if uses >= recycleEvery { await reset() }
        if world == nil { world = try await open() }
        uses += 1
        return world!
    }

    /// Closes the world; the next input gets a new one.
    func reset() async {
        if let world { await close(world) }
        world = nil
        uses = 0
    }
}

/// Logs of the servers under the fuzzer: only what is critical (a 500's "request failed" line would be written
/// thousands of times; the property that fails says what happened), unless `TILL_FUZZ_LOG` names a level
/// (`TILL_FUZZ_LOG=error` to see why a replayed input got a 500).
let quietLogger: Logger = {
    var logger = Logger(label: "till.fuzz")
    logger.logLevel =
        ProcessInfo.processInfo.environment["TILL_FUZZ_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
    return logger
}()

/// A verification server in memory that trusts ``FuzzPKI`` for the sandbox: one app with four products, and an
/// Apple it never reaches (no confirmation worker runs).
public struct ServerWorld: Sendable {
    public static let bundleId = "com.example.till"
    public static let operatorToken = "fuzz-operator-token-0123456789"

    let server: PurchaseServer
    let http: InProcessRouter<ServerRequestContext>
    let appKey: String

    static let shared = Recycled<ServerWorld>(
        recycleEvery: 20_000,
        open: open,
        close: { world in
            await world.http.close()
            try? await world.server.shutdown()
        }
    )

    static func open() async throws -> ServerWorld {
        let content = FileManager.default.temporaryDirectory.appendingPathComponent("till-fuzz-content-\(getpid())")
        let configuration = ServerConfiguration(
            operatorToken: operatorToken,
            apple: .simulator("http://127.0.0.1:9"),
            sandboxJWSRoots: [FuzzPKI.jws.root],
            sandboxReceiptRoots: [FuzzPKI.receipt.root],
            sandboxReceiptIntermediates: [FuzzPKI.receipt.intermediate],
            contentDirectory: content.path
        )
        let server = try await PurchaseServer.open(configuration, logger: quietLogger)
        let app = try await server.catalogue.createApp(
            ServerAppInput(bundleId: bundleId, appAppleId: 1_234_567_890, sharedSecrets: ["s3cret"])
        )
        let products: [(String, CatalogProductInput)] = [
            ("gems.100", CatalogProductInput(type: .consumable, credits: ["gems": 100], price: 990, currency: "USD")),
            ("pro", CatalogProductInput(type: .nonConsumable, entitlements: ["pro"])),
            (
                "premium.monthly",
                CatalogProductInput(type: .autoRenewable, entitlements: ["premium"], subscriptionGroup: "premium")
            ),
            ("issue.1", CatalogProductInput(type: .nonRenewing, entitlements: ["issue-1"], durationSeconds: 86_400)),
        ]
        for (id, input) in products {
            _ = try await server.catalogue.putProduct(bundleId: bundleId, productId: id, input)
        }
        return ServerWorld(
            server: server,
            http: InProcessRouter(buildServerRouter(server), logger: quietLogger),
            appKey: app.appKey
        )
    }
}

/// The App Store simulator in memory with one app, four products, a sandbox account with a device, and one
/// subscription bought on it; bodies name them with placeholders (`$APP`, `$DEVICE`, …) that are put in here.
public struct SimulatorWorld: Sendable {
    public static let bundleId = "com.example.till"

    let simulator: Simulator
    let http: InProcessRouter<SimulatorRequestContext>
    /// Placeholder → the world's value.
    let names: [(String, String)]

    static let shared = Recycled<SimulatorWorld>(
        recycleEvery: 20_000,
        open: open,
        close: { world in
            await world.http.close()
            try? await world.simulator.shutdown()
        }
    )

    static func open() async throws -> SimulatorWorld {
        let simulator = try await Simulator.open(SimulatorConfiguration(keys: .shared), logger: quietLogger)
        let app = try await simulator.appStoreConnect.createApp(
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
            _ = try await simulator.appStoreConnect.createProduct(appAppleId: app.appAppleId, input)
        }
        let account = try await simulator.appStoreConnect.createAccount(AccountInput(environment: "Sandbox"))
        let device = try await simulator.appStoreConnect.createDevice(accountId: account.id, DeviceInput())
        let bought = try await simulator.payments.addPayment(
            PaymentRequest(deviceId: device.id, bundleId: bundleId, productId: "premium.monthly"),
            environment: .sandbox
        )
        let transaction = bought.transactionId ?? "0"
        return SimulatorWorld(
            simulator: simulator,
            http: InProcessRouter(buildSimulatorRouter(simulator), logger: quietLogger),
            names: [
                ("$APP", String(app.appAppleId)), ("$DEVICE", device.id), ("$ACCOUNT", account.id),
                ("$TRANSACTION", transaction), ("$ORIGINAL", transaction), ("$BUNDLE", bundleId),
            ]
        )
    }

    /// `text` with the placeholders put in.
    func resolve(_ text: String) -> String {
        var text = text
        for (name, value) in names where text.contains(name) { text = text.replacingOccurrences(of: name, with: value) }
        return text
    }

    func resolve(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.contains(UInt8(ascii: "$")) else { return bytes }
        return Array(resolve(String(decoding: bytes, as: UTF8.self)).utf8)
    }
}
