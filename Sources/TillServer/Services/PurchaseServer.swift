import Crypto
import Foundation
import Logging
import SQLKit
import Synchronization
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillSnapshot
import TillStorage

/// The verification server's state and services: what the HTTP layer and the confirmation worker call.
public final class PurchaseServer: Sendable {
    public let configuration: ServerConfiguration
    public let database: TillDatabase
    let store: ServerStore
    let verifier: LocalVerifier
    let logger: Logger
    public let metrics: ServerMetrics
    /// Signs entitlement snapshots with the deployment's key (see `ServerConfiguration.snapshotSigningKey`).
    let snapshotSigner: SnapshotSigner
    /// The keys apps check snapshots with (`GET /v1/keys`): the signing key first, then the configured
    /// `snapshotPublishedKeys` (a rotation's next or previous key).
    public let snapshotKeys: SnapshotKeySet
    let now: @Sendable () -> Date
    /// Nudges the confirmation worker when a submission is queued.
    let workAvailable: Wakeup
    /// Wakes requests waiting (`?wait=`) for a submission to leave the queue.
    let submissionSettled: Wakeup
    /// Apps by key and catalogues by bundle id, read on every request (see `SnapshotCache`).
    let appsByKey = SnapshotCache<String, ServerApp?>(lifetime: .seconds(1))
    /// Apps by bundle id, for the confirmation worker (one lookup per attempt).
    let appsByBundle = SnapshotCache<String, ServerApp?>(lifetime: .seconds(1))
    let catalogues = SnapshotCache<String, [String: CatalogProduct]>(lifetime: .seconds(1))
    let customerSnapshots = SnapshotCache<CustomerKey, CustomerSnapshot>(lifetime: .seconds(1))
    /// Customer views as JSON, until the data under them changes or one of their entitlements ends.
    let customerBodies = SnapshotCache<CustomerKey, EncodedCustomer>(lifetime: .seconds(1))
    /// This process's hold on an SQLite file's queue (nil on PostgreSQL and in memory).
    let queueLock: SQLiteQueueLock?
    /// Set when Apple stopped answering (timeouts, resets, 5xx); the first real answer after it brings the
    /// submissions that wait for their back-off forward (see `appleIsBack()`).
    let appleUnavailable = Mutex(false)
    /// When Apple came back with a backlog: the worker's concurrency starts small then doubles each second,
    /// so confirming the backlog does not take the CPU that acknowledging new purchases needs.
    let recoveringSince = Mutex<ContinuousClock.Instant?>(nil)
    /// How fast the worker may start confirmation attempts (see `ConfirmationPacer`).
    let confirmationPacer: ConfirmationPacer
    /// Confirmation attempts a second the pacer allows now.
    public var confirmationPace: Double { confirmationPacer.rate }

    init(
        configuration: ServerConfiguration,
        database: TillDatabase,
        queueLock: SQLiteQueueLock? = nil,
        logger: Logger,
        metrics: ServerMetrics,
        snapshotSigner: SnapshotSigner,
        now: @escaping @Sendable () -> Date
    ) {
        self.configuration = configuration
        self.snapshotSigner = snapshotSigner
        var published = [snapshotSigner.publicKey]
        for key in configuration.snapshotPublishedKeys.map(SnapshotPublicKey.init)
        where !published.contains(where: { $0.kid == key.kid }) {
            published.append(key)
        }
        self.snapshotKeys = SnapshotKeySet(keys: published)
        self.queueLock = queueLock
        self.database = database
        self.store = ServerStore(database: database)
        self.verifier = LocalVerifier(configuration: configuration)
        self.logger = logger
        self.metrics = metrics
        self.now = now
        self.workAvailable = Wakeup()
        self.submissionSettled = Wakeup()
        self.confirmationPacer = ConfirmationPacer(
            .init(
                busy: configuration.confirmation.busyCPUShare,
                longestDelay: configuration.confirmation.longestPacingDelay
            )
        )
    }

    /// Opens and migrates the database.
    public static func open(
        _ configuration: ServerConfiguration,
        logger: Logger = Logger(label: "till.server"),
        metrics: ServerMetrics = ServerMetrics(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> PurchaseServer {
        let queueLock = try SQLiteQueueLock.acquire(for: configuration.database)
        let database: TillDatabase
        do {
            database = try await TillDatabase.open(configuration.database, logger: logger)
        } catch {
            queueLock?.release()
            throw error
        }
        let store = ServerStore(database: database)
        try await store.migrate()
        if queueLock != nil {
            // This process owns the file's queue: any claim in it was left by a server that stopped mid-attempt.
            let released = try await store.releaseClaims()
            if released > 0 { logger.notice("resuming \(released) confirmations a stopped server had under way") }
        }
        var configuration = configuration
        if configuration.serverSecret.isEmpty { configuration.serverSecret = try await store.sharedServerSecret() }
        let snapshotKey: P256.Signing.PrivateKey
        if let configured = configuration.snapshotSigningKey {
            snapshotKey = configured
        } else {
            snapshotKey = try await store.sharedSnapshotKey()
        }
        try FileManager.default.createDirectory(
            atPath: configuration.contentDirectory,
            withIntermediateDirectories: true
        )
        return PurchaseServer(
            configuration: configuration,
            database: database,
            queueLock: queueLock,
            logger: logger,
            metrics: metrics,
            snapshotSigner: SnapshotSigner(key: snapshotKey),
            now: now
        )
    }

    public func shutdown() async throws {
        defer { queueLock?.release() }
        try await database.shutdown()
    }

    var nowMilliseconds: Int64 { Int64((now().timeIntervalSince1970 * 1000).rounded()) }

    /// An app's products by id, as of at most a second ago (this process's own changes at once).
    func catalogue(bundleId: String) async throws -> [String: CatalogProduct] {
        try await catalogues.value(for: bundleId) {
            Dictionary(
                uniqueKeysWithValues: try await store.products(bundleId: bundleId, on: store.sql).map {
                    ($0.productId, $0)
                }
            )
        }
    }

    /// Forgets cached apps and catalogues after this process changed one.
    func catalogueChanged() {
        appsByKey.invalidateAll()
        appsByBundle.invalidateAll()
        catalogues.invalidateAll()
        customerBodies.invalidateAll()  // entitlements come from the catalogue
    }

    func requireApp(bundleId: String, on db: any SQLDatabase) async throws -> ServerApp {
        guard let app = try await store.app(bundleId: bundleId, on: db) else {
            throw TillHTTPError.notFound("app", bundleId)
        }
        return app
    }
}

/// A customer view encoded for the app API, and the time (UNIX ms) it stops being true, if any.
struct EncodedCustomer: Sendable {
    var body: [UInt8]
    var validUntil: Int64?
}

struct CustomerKey: Hashable, Sendable {
    var bundleId: String
    var customerId: String
}

/// What the database holds about a customer: who it really is (after aliases), its ledger and balances.
struct CustomerSnapshot: Sendable {
    var owner: String
    var ledger: [LedgerRecord]
    var balances: [String: Int64]
    var states: [SubscriptionStateRecord]
}
