import Foundation
import Logging
import SQLKit
import ServiceLifecycle
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillJobs
import TillLedger
import TillStorage

/// Catching up with Apple: after downtime or a lost notification, the server reads what Apple says it sent and
/// what its customers did, and applies what it missed, exactly once (docs/notifications.md, "Catching up").
///
/// A run takes one app, in each environment it accepts (production; the sandbox when the app accepts it):
/// `NotificationHistoryReader` reads Notification History since the last complete read and records every
/// notification as a delivery would be; `TransactionHistoryReader` reads each App Store customer's Transaction
/// History from its stored revision and gives the ledger what it did not have. Each app's runs are a `catchUp` job of
/// the job queue (its key the bundle id): one run at a time per app, across every process sharing the database, the
/// next one scheduled `catch-up.interval-seconds` after each; the last run's report is kept in `srv_catch_up_runs`.
/// `CatchUpWorker` runs the due ones, every app at start; the admin API runs one on demand.
public struct CatchUp: AppStoreRoom, Sendable {
    let services: AppStoreServices
    /// The catch-up's own tables: its reports, checkpoints and history pages.
    var catchUpStore: CatchUpStore { CatchUpStore(database: database) }
    let notifications: NotificationIntake

    package init(
        services: AppStoreServices,
        notifications: NotificationIntake
    ) {
        self.services = services
        self.notifications = notifications
    }

    /// How long a run holds its app: a run stopped by a crash frees it after this (at once for the process that
    /// owns an SQLite file, which clears the claims when it starts).
    static let lease: Duration = .seconds(15 * 60)

    var notificationHistory: NotificationHistoryReader {
        NotificationHistoryReader(settings: configuration.catchUp, services: services, notifications: notifications)
    }

    var transactionHistory: TransactionHistoryReader {
        TransactionHistoryReader(services: services)
    }

    /// Catches up one app now and answers what was read and applied. Throws `appNotFound`, `noAPIKey` (nobody to
    /// ask) and `catchUpRunning`; Apple not answering is not an error of the run but part of its report.
    public func run(bundleId: String, trigger: CatchUpRun.TriggerPayload = .admin) async throws -> CatchUpRun {
        let app = try await catalogue.app(bundleId: bundleId)
        guard Self.hasAPIKey(app) else {
            throw CatchUpRefusal(
                .noAPIKey,
                "\(bundleId) has no App Store Server API key, so there is no one to ask: set apiKeyId, apiIssuerId and apiPrivateKey"
            )
        }
        guard try await jobs.claim(.catchUp, key: bundleId, lease: Self.lease) != nil else {
            throw CatchUpRefusal(
                .catchUpRunning,
                "a catch-up of \(bundleId) is under way; try again when it ends"
            )
        }
        return try await perform(app, trigger: trigger)
    }

    /// Runs a catch-up of `app`, whose job this process holds, and ends the job's attempt: the next run is scheduled
    /// an interval later (none with an interval of zero).
    private func perform(_ app: ServerApp, trigger: CatchUpRun.TriggerPayload) async throws -> CatchUpRun {
        let startedAt = clock.milliseconds
        let interval = configuration.catchUp.interval
        do {
            let run = await read(app, trigger: trigger, startedAt: startedAt)
            // A key given or changed while this run read with the old one could not bring the job forward (it was
            // claimed): the next run is then due at once, not an interval later.
            let rekeyed = (try? await catalogue.app(bundleId: app.bundleId)).map { !$0.hasSameAPIKey(as: app) } ?? false
            let report = String(decoding: try JSONEncoder().encode(run), as: UTF8.self)
            try await database.transaction(bookkeeping: true) { db in
                try await self.catchUpStore.saveCatchUpReport(
                    bundleId: app.bundleId,
                    finishedAt: run.finishedAt,
                    outcome: run.outcome.rawValue,
                    report: report,
                    on: db
                )
                try await self.endAttempt(of: app.bundleId, interval: interval, now: rekeyed, error: nil, on: db)
            }
            metrics.catchUp(run)
            log(run)
            return run
        } catch {
            _ = try? await database.transaction(bookkeeping: true) { db in
                try await self.endAttempt(of: app.bundleId, interval: interval, error: "\(error)", on: db)
            }
            throw error
        }
    }

    /// The next run of the app an interval from now (`now`: at once); with an interval of zero, none until an
    /// operator asks.
    private func endAttempt(
        of bundleId: String,
        interval: Duration,
        now: Bool = false,
        error: String?,
        on db: any SQLDatabase
    ) async throws {
        if interval > .zero {
            try await jobs.retry(
                .catchUp,
                key: bundleId,
                at: clock.milliseconds + (now ? 0 : interval.milliseconds),
                error: error,
                on: db
            )
        } else {
            try await jobs.finish(.catchUp, key: bundleId, on: db)
        }
    }

    /// The app's last finished run, or `catchUpNeverRun`.
    public func lastRun(bundleId: String) async throws -> CatchUpRun {
        _ = try await catalogue.app(bundleId: bundleId)
        guard let report = try await catchUpStore.lastCatchUpReport(bundleId: bundleId, on: database.sql) else {
            throw CatchUpRefusal(.catchUpNeverRun, "\(bundleId) has not caught up with Apple yet")
        }
        return try JSONDecoder().decode(CatchUpRun.self, from: Data(report.utf8))
    }

    /// Makes a catch-up of every app that has an App Store Server API key due by `dueAt` (`CatchUpWorker`: at start,
    /// now; then an interval later at the latest, which also schedules the apps added since).
    func schedule(dueAt: Int64) async throws {
        let apps = try await catalogue.apps().filter(Self.hasAPIKey)
        guard !apps.isEmpty else { return }
        try await database.transaction(bookkeeping: true) { db in
            for app in apps { try await self.jobs.schedule(.catchUp, key: app.bundleId, dueAt: dueAt, on: db) }
        }
    }

    /// Makes the app's catch-up due at `now` (its App Store Server API key came or changed) and wakes the worker: a
    /// job due later comes forward, one under way is left to finish (its next is scheduled as usual).
    package static func bringForward(bundleId: String, jobs: JobQueue, database: TillDatabase, at now: Int64)
        async throws
    {
        try await database.transaction(bookkeeping: true) { db in
            try await jobs.schedule(.catchUp, key: bundleId, dueAt: now, on: db)
        }
        jobs.wake(.catchUp)
    }

    /// Runs a claimed catch-up job (`CatchUpRuns`): the app's catch-up, which schedules its next run; a job whose app
    /// is gone or has no App Store Server API key any more is finished.
    func run(_ job: Job, trigger: (String) -> CatchUpRun.TriggerPayload) async {
        do {
            guard let app = try await catalogue.cachedApp(bundleId: job.jobKey), Self.hasAPIKey(app) else {
                try await database.transaction(bookkeeping: true) { db in
                    try await self.jobs.finish(.catchUp, key: job.jobKey, on: db)
                }
                return
            }
            _ = try await perform(app, trigger: trigger(app.bundleId))
        } catch {
            logger.error("catch-up of \(job.jobKey) failed: \(error)")
        }
    }

    /// Each environment the app accepts: both histories, each read as far as Apple answers.
    private func read(_ app: ServerApp, trigger: CatchUpRun.TriggerPayload, startedAt: Int64) async -> CatchUpRun {
        let client = AppleClient(
            endpoints: configuration.apple,
            timeout: configuration.confirmation.requestTimeout,
            metrics: metrics
        )
        var environments: [CatchUpEnvironmentReport] = []
        for environment in Self.environments(of: app) {
            let notifications = await notificationHistory.read(app, environment, client: client)
            let transactions = await transactionHistory.read(app, environment, client: client)
            environments.append(
                CatchUpEnvironmentReport(
                    environment: environment.rawValue,
                    notifications: notifications,
                    transactions: transactions
                )
            )
        }
        await client.shutdown()
        let complete = environments.allSatisfy { $0.notifications.complete && $0.transactions.complete }
        return CatchUpRun(
            bundleId: app.bundleId,
            trigger: trigger,
            outcome: complete ? .complete : .incomplete,
            startedAt: startedAt,
            finishedAt: clock.milliseconds,
            environments: environments
        )
    }

    private func log(_ run: CatchUpRun) {
        let recovered = run.environments.reduce(0) { $0 + $1.notifications.applied + $1.notifications.ignored }
        let recorded = run.environments.reduce(0) { $0 + $1.transactions.recorded }
        let revoked = run.environments.reduce(0) { $0 + $1.transactions.revoked }
        let errors = run.environments.flatMap { [$0.notifications.error, $0.transactions.error] }.compactMap { $0 }
        let message =
            "catch-up of \(run.bundleId) (\(run.trigger.rawValue)): \(run.outcome.rawValue); \(recovered) notifications recovered, \(recorded) transactions recorded, \(revoked) revoked"
            + (errors.isEmpty ? "" : "; " + errors.map(\.message).joined(separator: "; "))
        if errors.isEmpty { logger.info("\(message)") } else { logger.warning("\(message)") }
    }

    package static func hasAPIKey(_ app: ServerApp) -> Bool {
        app.apiKeyId != nil && app.apiIssuerId != nil && app.apiPrivateKey != nil
    }

    /// Production always; the sandbox only for an app that accepts sandbox purchases.
    static func environments(of app: ServerApp) -> [AppStoreEnvironment] {
        app.acceptSandbox ? [.production, .sandbox] : [.production]
    }
}

/// Apple's answer to one call of a catch-up: the body of its 200, or why there is none.
enum HistoryAnswer: Sendable {
    case body([UInt8])
    case failure(CatchUpError)
}

extension AppleClient.Answer {
    /// The body of Apple's 200, or why there is none: no answer, a 5xx or a 429 (`appleUnavailable`), the app's key
    /// refused or unusable (`configuration`), anything else (`other`: a request Apple refused).
    func body(of call: AppleEndpoint, in environment: AppStoreEnvironment, metrics: any AppStoreMetrics)
        -> HistoryAnswer
    {
        let api = "\(call.rawValue) (\(environment.rawValue))"
        switch self {
        case .misconfigured(let problem):
            return .failure(CatchUpError(cause: .configuration, message: "\(api): \(problem)"))
        case .transport(let cause):
            metrics.appleCall(endpoint: call, environment: environment, status: cause)
            return .failure(CatchUpError(cause: .appleUnavailable, message: "no answer from \(api): \(cause)"))
        case .http(200, let body, _):
            metrics.appleCall(endpoint: call, environment: environment, status: "HTTP 200")
            return .body(body)
        case .http(let status, let body, _):
            let error = try? JSONDecoder().decode(APIError.self, from: Data(body))
            metrics.appleCall(
                endpoint: call,
                environment: environment,
                status: "HTTP \(status)" + (error.map { " \($0.errorCode)" } ?? "")
            )
            if status == 401 {
                return .failure(
                    CatchUpError(
                        cause: .configuration,
                        message: "\(api) refused the app's key: fix apiKeyId, apiIssuerId or apiPrivateKey"
                    )
                )
            }
            let detail = error.map { ": \($0.errorMessage) (\($0.errorCode))" } ?? ""
            return .failure(
                CatchUpError(
                    // 429: Apple asks this key to slow down; like an outage, the next run reads what is left.
                    cause: status >= 500 || status == 429 ? .appleUnavailable : .other,
                    message: "\(api) answered HTTP \(status)\(detail)"
                )
            )
        }
    }
}
