import Crypto
import Foundation
import Logging
import SQLKit
import Synchronization
import TillAppStore
import TillCatalogue
import TillConsole
import TillContent
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillJobs
import TillLedger
import TillSnapshot
import TillStorage
import TillWebhooks

/// The verification server, as the composition root: it opens the database and builds the components, each with
/// one job and its dependencies given explicitly (docs/architecture.md draws them):
///
/// - `catalogue`: apps, products, the master list;
/// - `events`: the event log: every change as a typed event, written with the change, read as the feed;
/// - `jobs`: the durable job queue that confirmations, consumption answers, catch-up and deliveries share;
/// - `ledger`: the only code that posts, credits, debits, revokes and refunds, each change an event;
/// - `customers`: who a customer is and what they have now;
/// - `snapshots`: what the server vouches a customer has, signed;
/// - `intake`: submissions and restores, verified locally and recorded in milliseconds;
/// - `queue`: the confirmation with Apple, retried and classified (run by `ConfirmationWorker`);
/// - `notifications`: App Store Server Notifications, verified, recorded once and applied;
/// - `consumption`: Apple's consumption requests answered (run by `ConsumptionWorker`);
/// - `appTransactions`: the AppTransaction each customer's app sent, verified and kept;
/// - `offers`: promotional offers and introductory-offer eligibility signed for apps;
/// - `catchUp`: what Apple's notification and transaction histories hold that the server missed, applied once;
/// - `imports`: the customers an app already has, read from Apple's Transaction History (run by `ImportWorker`);
/// - `content`: the files products deliver and their signed download URLs;
/// - `webhooks`: the app's webhook endpoints and the deliveries of its events to them (Standard Webhooks);
/// - `figures`: revenue, renewals and subscriptions per day, folded from the ledger's journal (the revenue report,
///   the console's overview);
/// - `metrics`: what `/metrics` reports.
///
/// The HTTP layer (`buildServerApplication`) and the command line call the components.
public final class PurchaseServer: Sendable {
    public let configuration: ServerConfiguration
    public let database: TillDatabase
    public let metrics: ServerMetrics
    public let catalogue: Catalogue
    public let events: EventLog
    let jobs: JobQueue
    public let ledger: Ledger
    public let customers: Customers
    public let snapshots: Snapshots
    public let intake: Intake
    public let queue: ConfirmationQueue
    /// The operator's side of the queue: its lists, its depth, requeueing dead letters.
    public let queueAdmin: QueueAdmin
    public let notifications: NotificationIntake
    public let consumption: ConsumptionAnswers
    public let appTransactions: AppTransactions
    public let offers: Offers
    public let catchUp: CatchUp
    public let imports: Imports
    public let content: ContentDelivery
    public let webhookEndpoints: WebhookEndpoints
    public let webhookDeliveries: WebhookDeliveries
    public let webhookHistory: WebhookDeliveryHistory
    public let figures: Figures
    /// `GET /ready`: storage answering, not draining.
    public let readiness: Readiness
    let consoleSessions: ConsoleSessions
    /// What is done in the console, kept with its sessions.
    var consoleAudit: ConsoleAudit { consoleSessions.audit }
    /// When this process built the server (the console's "since").
    let startedAt: Int64
    let clock: ServerClock
    let logger: Logger
    /// This process's hold on an SQLite file's queue (nil on PostgreSQL and in memory).
    let queueLock: SQLiteQueueLock?
    /// The tracer bound to the server's requests and workers, and its exporter; nil with tracing off.
    public let tracing: ServerTracing?

    init(
        configuration: ServerConfiguration,
        database: TillDatabase,
        queueLock: SQLiteQueueLock? = nil,
        logger: Logger,
        metrics: ServerMetrics,
        snapshotSigner: SnapshotSigner,
        tracing: ServerTracing? = nil,
        now: @escaping @Sendable () -> Date
    ) {
        self.tracing = tracing
        let clock = ServerClock(now: now)
        let jobs = JobQueue(database: database, store: JobStore(database: database), clock: clock, metrics: metrics)
        let signals = QueueSignals(workAvailable: jobs.signal(.confirmation))
        let appStore = configuration.appStore
        let verifier = LocalVerifier(configuration: appStore)
        self.configuration = configuration
        self.database = database
        self.queueLock = queueLock
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
        readiness = Readiness(database: database)
        // An app's new credentials for Apple: the confirmations that failed on the old ones are due at once, and an
        // App Store Server API key that came or changed brings the app's catch-up forward to now (a key given after
        // the server started waited up to `catch-up.interval-seconds` for its first run).
        let catchUpInterval = configuration.catchUp.interval
        catalogue = Catalogue(database: database, clock: clock) { app, apiKey in
            let bundleId = app.bundleId
            let moved = try await ConfirmationQueue.bringForward(
                cause: .configuration,
                bundleId: bundleId,
                database: database,
                at: clock.milliseconds
            )
            if moved > 0 {
                logger.notice("\(bundleId)'s credentials changed: \(moved) confirmations they failed are due now")
                signals.workAvailable.signal()
            }
            // After the confirmations, and not refusing the change if it fails: the app's periodic run comes anyway.
            if apiKey, catchUpInterval > .zero, CatchUp.hasAPIKey(app) {
                do {
                    try await CatchUp.bringForward(
                        bundleId: bundleId,
                        jobs: jobs,
                        database: database,
                        at: clock.milliseconds
                    )
                } catch {
                    logger.error("\(bundleId)'s new API key: its catch-up could not be brought forward: \(error)")
                }
            }
        }
        self.jobs = jobs
        // Recorded events wake the webhook worker, which dispatches them.
        events = EventLog(
            database: database,
            catalogue: catalogue,
            clock: clock,
            appended: jobs.signal(.delivery)
        )
        ledger = Ledger(database: database, events: events, clock: clock)
        customers = Customers(database: database, catalogue: catalogue, ledger: ledger, clock: clock)
        appTransactions = AppTransactions(database: database, verifier: verifier, clock: clock)
        offers = Offers(
            database: database,
            catalogue: catalogue,
            customers: customers,
            appTransactions: appTransactions,
            clock: clock,
            logger: logger
        )
        snapshots = Snapshots(
            signer: snapshotSigner,
            published: configuration.snapshotPublishedKeys.map(SnapshotPublicKey.init),
            customers: customers,
            clock: clock
        )
        let appStoreServices = AppStoreServices(
            configuration: appStore,
            database: database,
            verifier: verifier,
            catalogue: catalogue,
            ledger: ledger,
            jobs: jobs,
            metrics: metrics,
            clock: clock,
            logger: logger
        )
        consumption = ConsumptionAnswers(services: appStoreServices, events: events)
        notifications = NotificationIntake(services: appStoreServices, consumption: consumption)
        intake = Intake(
            services: appStoreServices,
            customers: customers,
            notifications: notifications,
            signals: signals
        )
        queue = ConfirmationQueue(services: appStoreServices, intake: intake, signals: signals)
        queueAdmin = QueueAdmin(services: appStoreServices, signals: signals)
        catchUp = CatchUp(services: appStoreServices, notifications: notifications)
        imports = Imports(services: appStoreServices)
        content = ContentDelivery(
            settings: configuration.content,
            directory: configuration.contentDirectory,
            secret: configuration.serverSecret,
            database: database,
            catalogue: catalogue,
            customers: customers,
            clock: clock,
            logger: logger
        )
        webhookEndpoints = WebhookEndpoints(
            database: database,
            catalogue: catalogue,
            jobs: jobs,
            policy: WebhookAddressPolicy(configuration.webhooks),
            clock: clock,
            logger: logger
        )
        figures = Figures(database: database, clock: clock, logger: logger)
        consoleSessions = ConsoleSessions(
            database: database,
            clock: clock,
            operatorToken: configuration.operatorToken
        )
        startedAt = clock.milliseconds
        webhookDeliveries = WebhookDeliveries(
            settings: configuration.webhooks,
            database: database,
            endpoints: webhookEndpoints,
            jobs: jobs,
            metrics: metrics,
            clock: clock,
            logger: logger
        )
        webhookHistory = WebhookDeliveryHistory(database: database, endpoints: webhookEndpoints)
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
            database = try await TillDatabase.open(
                configuration.database,
                logger: logger,
                storageWait: configuration.databaseWait
            )
        } catch {
            queueLock?.release()
            throw error
        }
        let settingStore = SettingStore(database: database)
        do {
            try await ServerSchema.migrate(database)
        } catch {
            // A refused database (one a newer release migrated, say) leaves the file to whoever opens it next.
            try? await database.shutdown()
            queueLock?.release()
            throw error
        }
        if queueLock != nil {
            // This process owns the file's queue: any claim in it was left by a server that stopped mid-attempt.
            let jobs = JobQueue(
                database: database,
                store: JobStore(database: database),
                clock: ServerClock(now: now),
                metrics: metrics
            )
            for (kind, count) in try await jobs.releaseAllClaims().sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                logger.notice("resuming \(count) \(kind.rawValue) jobs a stopped server had under way")
            }
            // And its holds (an endpoint it sent to at dispatch): their events need not wait for them to lapse.
            let endpoints = try await jobs.releaseAllHolds()[.delivery] ?? 0
            if endpoints > 0 {
                logger.notice(
                    "resuming the webhook deliveries to \(endpoints) endpoint\(endpoints == 1 ? "" : "s") that a stopped server was sending to"
                )
            }
        }
        var configuration = configuration
        if configuration.serverSecret.isEmpty {
            configuration.serverSecret = try await settingStore.sharedServerSecret()
        }
        let snapshotKey: P256.Signing.PrivateKey
        if let configured = configuration.snapshotSigningKey {
            snapshotKey = configured
        } else {
            snapshotKey = try await settingStore.sharedSnapshotKey()
        }
        try FileManager.default.createDirectory(
            atPath: configuration.contentDirectory,
            withIntermediateDirectories: true
        )
        let tracing: ServerTracing?
        do {
            tracing = try configuration.tracing.map { try ServerTracing($0, logger: logger) }
        } catch {
            try? await database.shutdown()
            queueLock?.release()
            throw error
        }
        return PurchaseServer(
            configuration: configuration,
            database: database,
            queueLock: queueLock,
            logger: logger,
            metrics: metrics,
            snapshotSigner: SnapshotSigner(key: snapshotKey),
            tracing: tracing,
            now: now
        )
    }

    public func shutdown() async throws {
        defer { queueLock?.release() }
        try await database.shutdown()
    }

    /// Now, in UNIX milliseconds, as every component sees it.
    var nowMilliseconds: Int64 { clock.milliseconds }
}

extension ConfirmationWorker {
    /// The worker that confirms the server's submissions with Apple.
    public init(server: PurchaseServer) { self.init(queue: server.queue) }
}

extension ImportWorker {
    /// The worker of the server's imports of existing customers.
    public init(server: PurchaseServer) { self.init(imports: server.imports) }
}

extension CatchUpWorker {
    /// The worker of the server's catch-up runs.
    public init(server: PurchaseServer) { self.init(catchUp: server.catchUp) }
}

extension ConsumptionWorker {
    /// The worker that answers Apple's consumption requests for the server.
    public init(server: PurchaseServer) { self.init(answers: server.consumption) }
}

extension WebhookWorker {
    /// The worker of the server's webhook deliveries.
    public init(server: PurchaseServer) {
        self.init(
            deliveries: server.webhookDeliveries,
            committed: server.events.committed,
            endpointChanges: server.webhookEndpoints.revision
        )
    }
}
