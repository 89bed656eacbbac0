import AsyncHTTPClient
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
    /// How fast sandbox subscriptions renew (production always runs in real time). Given, it wins over the rate a
    /// database kept (`PUT /admin/v1/clock/rate`); nil keeps that one, or `monthlyEvery5Minutes` for a new database.
    public var renewalRate: RenewalRate?
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
    /// How long the App Store waits for a developer's Retention Messaging realtime URL (Apple: 700 ms).
    public var realtimeTimeout: Duration
    /// The signing keys a new database stores on its first start instead of making its own (a database that has
    /// keys keeps them). The tests share ``SimulatorKeys/shared``.
    public var keys: SimulatorKeys?

    public init(
        database: DatabaseConfiguration = .sqliteInMemory,
        renewalRate: RenewalRate? = nil,
        maximumSandboxRenewals: Int = 12,
        billingRetryDays: Double = 60,
        notificationRetryDelays: [AppStoreEnvironment: [Double]] = [
            .production: SimulatorConfiguration.productionNotificationRetryDelays, .sandbox: [],
        ],
        faults: [FaultRule] = [],
        adminToken: String? = nil,
        realtimeTimeout: Duration = .milliseconds(700),
        keys: SimulatorKeys? = nil
    ) {
        self.database = database
        self.renewalRate = renewalRate
        self.maximumSandboxRenewals = maximumSandboxRenewals
        self.billingRetryDays = billingRetryDays
        self.notificationRetryDelays = notificationRetryDelays
        self.faults = faults
        self.adminToken = adminToken
        self.realtimeTimeout = realtimeTimeout
        self.keys = keys
    }

    /// Apple's production schedule: retries 1, 12, 24, 48 and 72 hours after the previous attempt.
    public static let productionNotificationRetryDelays: [Double] = [
        3600, 12 * 3600, 24 * 3600, 48 * 3600, 72 * 3600,
    ]
}

/// The App Store stand-in, as the composition root: it opens the database, restores the clock and the signing
/// authorities, and builds the rooms, each with its dependencies given explicitly (docs/architecture.md):
///
/// - `receipts`: signed transactions, renewal info, app transactions, receipts, and verifyReceipt;
/// - `notifications`: App Store Server Notifications, signed and delivered with Apple's retries;
/// - `subscriptions`: the subscription engine (renewals, billing retry, expiry, refunds) as time passes;
/// - `payments`: StoreKit on a device: product lookup, payments, the transaction queue, restore;
/// - `serverAPI`: the App Store Server API;
/// - `appStoreConnect`: apps, keys, products, sandbox accounts and devices;
/// - `retention`: Retention Messaging: images, messages, default messages, the realtime URL and its calls;
/// - `offers`: introductory and promotional offers, offer codes and win-back offers, and who gets which;
/// - `events`: what the App Store reports that is not a purchase (consent withdrawn, external purchase tokens,
///   Advanced Commerce changes).
///
/// The HTTP layer (``buildSimulatorApplication(_:)``) and the background services call the rooms.
public final class Simulator: Sendable {
    public let configuration: SimulatorConfiguration
    public let database: TillDatabase
    public let signer: SimulatorSigner
    public let clock: SimulatorClock
    public let faults: FaultRegistry
    public let receipts: Receipts
    public let notifications: NotificationSender
    public let subscriptions: SubscriptionEngine
    public let payments: Payments
    public let serverAPI: ServerAPI
    public let appStoreConnect: AppStoreConnect
    public let retention: RetentionMessaging
    public let offers: Offers
    public let events: StoreEvents
    let store: SimulatorStore
    let logger: Logger

    init(
        configuration: SimulatorConfiguration,
        database: TillDatabase,
        signer: SimulatorSigner,
        clock: SimulatorClock,
        logger: Logger
    ) {
        let store = SimulatorStore(database: database)
        let faults = FaultRegistry(configuration.faults)
        let anchors = TrustAnchors(
            roots: [signer.receiptAuthority.root],
            intermediates: [signer.receiptAuthority.intermediate]
        )
        let offers = Offers(database: database, store: store, clock: clock)
        // Kept for the simulator's life, so that their caches of checked signers and chains are used.
        let receiptVerifier = ReceiptVerifier(.init(anchors: anchors))
        let transactionReceiptVerifier = TransactionReceiptVerifier(.init(anchors: anchors))
        let receipts = Receipts(
            store: store,
            offers: offers,
            signer: signer,
            clock: clock,
            logger: logger,
            receiptVerifier: receiptVerifier,
            transactionReceiptVerifier: transactionReceiptVerifier
        )
        let notifications = NotificationSender(
            configuration: configuration,
            store: store,
            signer: signer,
            clock: clock,
            logger: logger,
            receipts: receipts,
            due: Wakeup()
        )
        let subscriptions = SubscriptionEngine(
            configuration: configuration,
            database: database,
            store: store,
            clock: clock,
            notifications: notifications,
            due: Wakeup()
        )
        let payments = Payments(
            database: database,
            store: store,
            clock: clock,
            faults: faults,
            receipts: receipts,
            notifications: notifications,
            offers: offers
        )
        let serverAPI = ServerAPI(
            database: database,
            store: store,
            clock: clock,
            receipts: receipts,
            notifications: notifications,
            subscriptions: subscriptions
        )
        let appStoreConnect = AppStoreConnect(
            database: database,
            store: store,
            clock: clock,
            subscriptions: subscriptions
        )
        let retention = RetentionMessaging(
            configuration: configuration,
            database: database,
            store: store,
            clock: clock,
            receipts: receipts,
            logger: logger,
            http: HTTPClient.shared
        )
        self.configuration = configuration
        self.database = database
        self.store = store
        self.signer = signer
        self.clock = clock
        self.faults = faults
        self.logger = logger
        self.receipts = receipts
        self.notifications = notifications
        self.subscriptions = subscriptions
        self.payments = payments
        self.serverAPI = serverAPI
        self.appStoreConnect = appStoreConnect
        self.retention = retention
        self.offers = offers
        self.events = StoreEvents(
            database: database,
            store: store,
            clock: clock,
            receipts: receipts,
            notifications: notifications
        )
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
        let signer = try await SimulatorSigner.load(from: database, keys: configuration.keys)
        let offset = Int64(try await store.setting("clock_offset_ms", on: database.sql) ?? "0") ?? 0
        var rate = RenewalRate.monthlyEvery5Minutes
        if let given = configuration.renewalRate {
            rate = given
        } else if let stored = try await store.setting("renewal_rate", on: database.sql),
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
}

/// Apple's storefront ids for the storefronts the simulator knows; others get a stable made-up id.
enum Storefronts {
    static let ids: [String: String] = [
        "USA": "143441", "FRA": "143442", "DEU": "143443", "GBR": "143444", "CAN": "143455", "AUS": "143460",
        "JPN": "143462", "CHN": "143465", "ITA": "143450", "ESP": "143454", "NLD": "143452", "BRA": "143503",
        "IND": "143467", "MEX": "143468", "KOR": "143466", "CHE": "143459", "SWE": "143456",
    ]

    /// The countries a storefront may be: ISO 3166-1 alpha-3 codes (and XKS, Kosovo, which Apple sells in).
    static let countries: Set<String> = [
        "ABW", "AFG", "AGO", "AIA", "ALA", "ALB", "AND", "ARE", "ARG", "ARM", "ASM", "ATA", "ATF", "ATG", "AUS",
        "AUT", "AZE", "BDI", "BEL", "BEN", "BES", "BFA", "BGD", "BGR", "BHR", "BHS", "BIH", "BLM", "BLR", "BLZ",
        "BMU", "BOL", "BRA", "BRB", "BRN", "BTN", "BVT", "BWA", "CAF", "CAN", "CCK", "CHE", "CHL", "CHN", "CIV",
        "CMR", "COD", "COG", "COK", "COL", "COM", "CPV", "CRI", "CUB", "CUW", "CXR", "CYM", "CYP", "CZE", "DEU",
        "DJI", "DMA", "DNK", "DOM", "DZA", "ECU", "EGY", "ERI", "ESH", "ESP", "EST", "ETH", "FIN", "FJI", "FLK",
        "FRA", "FRO", "FSM", "GAB", "GBR", "GEO", "GGY", "GHA", "GIB", "GIN", "GLP", "GMB", "GNB", "GNQ", "GRC",
        "GRD", "GRL", "GTM", "GUF", "GUM", "GUY", "HKG", "HMD", "HND", "HRV", "HTI", "HUN", "IDN", "IMN", "IND",
        "IOT", "IRL", "IRN", "IRQ", "ISL", "ISR", "ITA", "JAM", "JEY", "JOR", "JPN", "KAZ", "KEN", "KGZ", "KHM",
        "KIR", "KNA", "KOR", "KWT", "LAO", "LBN", "LBR", "LBY", "LCA", "LIE", "LKA", "LSO", "LTU", "LUX", "LVA",
        "MAC", "MAF", "MAR", "MCO", "MDA", "MDG", "MDV", "MEX", "MHL", "MKD", "MLI", "MLT", "MMR", "MNE", "MNG",
        "MNP", "MOZ", "MRT", "MSR", "MTQ", "MUS", "MWI", "MYS", "MYT", "NAM", "NCL", "NER", "NFK", "NGA", "NIC",
        "NIU", "NLD", "NOR", "NPL", "NRU", "NZL", "OMN", "PAK", "PAN", "PCN", "PER", "PHL", "PLW", "PNG", "POL",
        "PRI", "PRK", "PRT", "PRY", "PSE", "PYF", "QAT", "REU", "ROU", "RUS", "RWA", "SAU", "SDN", "SEN", "SGP",
        "SGS", "SHN", "SJM", "SLB", "SLE", "SLV", "SMR", "SOM", "SPM", "SRB", "SSD", "STP", "SUR", "SVK", "SVN",
        "SWE", "SWZ", "SXM", "SYC", "SYR", "TCA", "TCD", "TGO", "THA", "TJK", "TKL", "TKM", "TLS", "TON", "TTO",
        "TUN", "TUR", "TUV", "TWN", "TZA", "UGA", "UKR", "UMI", "URY", "USA", "UZB", "VAT", "VCT", "VEN", "VGB",
        "VIR", "VNM", "VUT", "WLF", "WSM", "XKS", "YEM", "ZAF", "ZMB", "ZWE",
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
