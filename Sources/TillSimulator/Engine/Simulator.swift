import Foundation
import HTTPTypes
import Logging
import SQLKit
import Synchronization
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

/// What a simulator is made of.
public struct SimulatorConfiguration: Sendable {
    public var database: DatabaseConfiguration
    /// How fast sandbox subscriptions renew (production always runs in real time).
    public var renewalRate: RenewalRate
    /// Apple's sandbox renews a subscription at most this many times, then lets it expire.
    public var maximumSandboxRenewals: Int
    /// How long the store keeps retrying a failed renewal, in (scaled) days.
    public var billingRetryDays: Double
    /// Delays (seconds of simulated time) between attempts to deliver a notification that the receiver refused,
    /// per environment. Apple retries in production only, 1, 12, 24, 48 and 72 hours after the previous attempt;
    /// its sandbox sends a notification once. Sandbox delays are an option for testing a receiver's retry
    /// handling (`till simulator --sandbox-notification-retries 10,60,300`), empty by default.
    public var notificationRetryDelays: [AppStoreEnvironment: [Double]]
    /// Faults active from the start.
    public var faults: [FaultRule]
    /// When set, the admin API requires `Authorization: Bearer <token>`.
    public var adminToken: String?

    public init(
        database: DatabaseConfiguration = .sqliteInMemory,
        renewalRate: RenewalRate = .monthlyEvery5Minutes,
        maximumSandboxRenewals: Int = 12,
        billingRetryDays: Double = 60,
        notificationRetryDelays: [AppStoreEnvironment: [Double]] = [
            .production: SimulatorConfiguration.productionNotificationRetryDelays, .sandbox: [],
        ],
        faults: [FaultRule] = [],
        adminToken: String? = nil
    ) {
        self.database = database
        self.renewalRate = renewalRate
        self.maximumSandboxRenewals = maximumSandboxRenewals
        self.billingRetryDays = billingRetryDays
        self.notificationRetryDelays = notificationRetryDelays
        self.faults = faults
        self.adminToken = adminToken
    }

    /// Apple's production schedule: retries 1, 12, 24, 48 and 72 hours after the previous attempt.
    public static let productionNotificationRetryDelays: [Double] = [
        3600, 12 * 3600, 24 * 3600, 48 * 3600, 72 * 3600,
    ]
}

/// The App Store stand-in: its state, its signing authorities and its clock. The HTTP layer
/// (``buildSimulatorApplication(_:)``) and the background services call into it.
public final class Simulator: Sendable {
    public let configuration: SimulatorConfiguration
    public let database: TillDatabase
    public let signer: SimulatorSigner
    public let clock: SimulatorClock
    public let faults: FaultRegistry
    let store: SimulatorStore
    let logger: Logger
    let notificationsDue: Wakeup
    let renewalsDue: Wakeup
    /// Kept for the simulator's life, so that their caches of checked signers and chains are used.
    let receiptVerifier: ReceiptVerifier
    let transactionReceiptVerifier: TransactionReceiptVerifier

    init(
        configuration: SimulatorConfiguration,
        database: TillDatabase,
        signer: SimulatorSigner,
        clock: SimulatorClock,
        logger: Logger
    ) {
        self.configuration = configuration
        self.database = database
        self.store = SimulatorStore(database: database)
        self.signer = signer
        self.clock = clock
        self.faults = FaultRegistry(configuration.faults)
        self.logger = logger
        self.notificationsDue = Wakeup()
        self.renewalsDue = Wakeup()
        let anchors = TrustAnchors(
            roots: [signer.receiptAuthority.root],
            intermediates: [signer.receiptAuthority.intermediate]
        )
        self.receiptVerifier = ReceiptVerifier(.init(anchors: anchors))
        self.transactionReceiptVerifier = TransactionReceiptVerifier(.init(anchors: anchors))
    }

    /// Opens (and migrates) the simulator's database, restores its clock and authorities.
    public static func open(
        _ configuration: SimulatorConfiguration,
        logger: Logger = Logger(label: "till.simulator"),
        realNow: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> Simulator {
        let database = try await TillDatabase.open(configuration.database, logger: logger)
        let store = SimulatorStore(database: database)
        try await store.migrate()
        let signer = try await SimulatorSigner.load(from: database)
        let offset = Int64(try await store.setting("clock_offset_ms", on: database.sql) ?? "0") ?? 0
        var rate = configuration.renewalRate
        if let stored = try await store.setting("renewal_rate", on: database.sql),
            let data = stored.data(using: .utf8), let decoded = try? JSONDecoder().decode(RenewalRate.self, from: data)
        {
            rate = decoded
        }
        let clock = SimulatorClock(offsetMilliseconds: offset, rate: rate, realNow: realNow)
        return Simulator(configuration: configuration, database: database, signer: signer, clock: clock, logger: logger)
    }

    public func shutdown() async throws {
        try await database.shutdown()
    }

    // MARK: Lookups shared by the APIs

    func requireApp(bundleId: String, on db: any SQLDatabase) async throws -> SimApp {
        guard let app = try await store.app(bundleId: bundleId, on: db) else {
            throw TillHTTPError.notFound("app", bundleId)
        }
        return app
    }

    func requireApp(appAppleId: Int64, on db: any SQLDatabase) async throws -> SimApp {
        guard let app = try await store.app(appAppleId: appAppleId, on: db) else {
            throw TillHTTPError.notFound("app", String(appAppleId))
        }
        return app
    }

    /// The device, its account, and a check that the account belongs to the environment and still exists.
    func requireDevice(_ deviceId: String, environment: AppStoreEnvironment, on db: any SQLDatabase) async throws
        -> (SimDevice, SimAccount)
    {
        guard let device = try await store.device(id: deviceId, on: db) else {
            throw TillHTTPError.notFound("device", deviceId)
        }
        guard let account = try await store.account(id: device.accountId, on: db) else {
            throw TillHTTPError.notFound("account", device.accountId)
        }
        guard !account.deleted else {
            throw TillHTTPError(.forbidden, "accountDeleted", "the account signed in on \(deviceId) was deleted")
        }
        guard account.appStoreEnvironment == environment else {
            throw TillHTTPError.badRequest(
                "wrongEnvironment",
                "the account on \(deviceId) is a \(account.environment) account, not \(environment)"
            )
        }
        return (device, account)
    }

    /// The next transaction id of an environment: production ids have 15 digits, sandbox ids 16, as Apple's do.
    func nextTransactionId(_ environment: AppStoreEnvironment, on db: any SQLDatabase) async throws -> String {
        let start: Int64 = environment == .production ? 530_000_000_000_000 : 2_000_000_900_000_000
        return String(try await store.next("transaction-\(environment.rawValue)", startingAt: start, on: db))
    }

    func nextWebOrderLineItemId(_ environment: AppStoreEnvironment, on db: any SQLDatabase) async throws -> String {
        let start: Int64 = environment == .production ? 530_000_010_000_000 : 2_000_000_100_000_000
        return String(try await store.next("web-order-\(environment.rawValue)", startingAt: start, on: db))
    }

    func nextSequence(on db: any SQLDatabase) async throws -> Int64 {
        try await store.next("revision", on: db)
    }

    /// An order id as on Apple's e-mailed receipts (`MK5TTTVWJH`).
    func makeOrderId() -> String {
        let characters = Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
        return String((0..<10).map { _ in characters.randomElement()! })
    }
}

/// Apple's storefront ids for the storefronts the simulator knows; others get a stable made-up id.
enum Storefronts {
    static let ids: [String: String] = [
        "USA": "143441", "FRA": "143442", "DEU": "143443", "GBR": "143444", "CAN": "143455", "AUS": "143460",
        "JPN": "143462", "CHN": "143465", "ITA": "143450", "ESP": "143454", "NLD": "143452", "BRA": "143503",
        "IND": "143467", "MEX": "143468", "KOR": "143466", "CHE": "143459", "SWE": "143456",
    ]

    static func id(for storefront: String) -> String {
        ids[storefront] ?? String(100_000 + stableNumber(storefront, below: 99_999))
    }
}

/// A number derived from a text, the same on every run (for made-up but stable Apple ids).
func stableNumber(_ text: String, below limit: Int) -> Int {
    let hash = text.unicodeScalars.reduce(UInt64(1_469_598_103_934_665_603)) {
        ($0 ^ UInt64($1.value)) &* 1_099_511_628_211
    }
    return Int(hash % UInt64(limit))
}
