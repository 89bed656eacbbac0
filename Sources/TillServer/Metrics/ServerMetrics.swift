import CoreMetrics
import Foundation
import Metrics
import Prometheus
import SQLKit
import Synchronization
import TillAppStore
import TillCatalogue
import TillContract
import TillCore
import TillJobs
import TillLedger
import TillStorage
import TillWebhooks

/// The server's measurements, through swift-metrics into a Prometheus registry of its own.
///
/// Each `PurchaseServer` has its own registry (tests run many servers in one process, and swift-metrics'
/// global bootstrap can happen once), and `/metrics` prints it in Prometheus' text format. Queue gauges are
/// read from the database at scrape time, so every process sharing a PostgreSQL queue reports the same depth.
public final class ServerMetrics: AppStoreMetrics, JobMetrics, WebhookMetrics, Sendable {
    public let registry: PrometheusCollectorRegistry
    let factory: PrometheusMetricsFactory

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        var factory = PrometheusMetricsFactory(registry: registry)
        let fast: [Duration] = [
            .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
            .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
            .milliseconds(500), .seconds(1), .seconds(5),
        ]
        let slow: [Duration] = [
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2),
            .seconds(3), .seconds(4), .seconds(6), .seconds(10), .seconds(30), .seconds(60),
        ]
        factory.durationHistogramBuckets = [
            "till_http_request_duration_seconds": fast,
            "till_submission_acknowledge_seconds": fast,
            "till_confirmation_attempt_seconds": slow,
            "till_webhook_attempt_seconds": slow,
            "till_apple_call_seconds": slow,
        ]
        self.factory = factory
        startCountersAtZero()
    }

    /// The counters docs/operations.md tells operators to alert on, each of its known series at 0 from the start: a
    /// series that appears only at its first increment has no rate, and an alert on its increase misses that first one.
    /// (Series labelled by what Apple or a request said, a status or a route, appear as they happen.)
    private func startCountersAtZero() {
        for outcome in CatchUpRun.OutcomePayload.allCases {
            let dimensions = [("outcome", outcome.rawValue)]
            _ = Counter(label: "till_catch_up_runs_total", dimensions: dimensions, factory: factory)
        }
        for environment in [AppStoreEnvironment.production, .sandbox] {
            for (history, result, _) in Self.catchUpCounts(nil) {
                _ = Counter(
                    label: "till_catch_up_\(history)_total",
                    dimensions: [("environment", environment.rawValue), ("result", result)],
                    factory: factory
                )
            }
        }
        // A notification refused before its type could be read (its signature failed): what the alert is for.
        _ = Counter(
            label: "till_notifications_total",
            dimensions: [("type", "unknown"), ("outcome", "refused")],
            factory: factory
        )
        for outcome in WebhookAttemptOutcome.allCases {
            let dimensions = [("outcome", outcome.rawValue)]
            _ = Counter(label: "till_webhook_attempts_total", dimensions: dimensions, factory: factory)
        }
        for kind in JobKind.allCases {
            for outcome in JobOutcome.allCases {
                _ = Counter(
                    label: "till_job_attempts_total",
                    dimensions: [("kind", kind.rawValue), ("outcome", outcome.rawValue)],
                    factory: factory
                )
            }
        }
    }

    /// A submission was answered: `outcome` is accepted, duplicate or refused.
    package func submission(kind: String, outcome: String, duration: Duration) {
        Counter(label: "till_submissions_total", dimensions: [("kind", kind), ("outcome", outcome)], factory: factory)
            .increment()
        if outcome != "refused" {
            Metrics.Timer(label: "till_submission_acknowledge_seconds", dimensions: [], factory: factory)
                .recordNanoseconds(duration.nanoseconds)
        }
    }

    /// A confirmation attempt ended: `result` is confirmed, retrying, rejected or deadLettered; `status` is
    /// what Apple (or the network) said, coarsened so that the label set stays small.
    package func confirmation(result: String, status: String, duration: Duration) {
        Counter(
            label: "till_confirmations_total",
            dimensions: [("result", result), ("status", Self.coarse(status))],
            factory: factory
        ).increment()
        Metrics.Timer(label: "till_confirmation_attempt_seconds", dimensions: [("result", result)], factory: factory)
            .recordNanoseconds(duration.nanoseconds)
    }

    /// One call to Apple (or the simulator) came back: `endpoint` is the service asked, `status` what it
    /// said (`status 21007`, `status 0`, `HTTP 200`, `HTTP 404 4040010`, `timeout`, …). A sandbox receipt shows
    /// production-first at work: a production call answering `status 21007`, then a sandbox call.
    package func appleCall(endpoint: AppleEndpoint, environment: AppStoreEnvironment, status: String) {
        let status = Self.coarse(status)
        Counter(
            label: "till_apple_calls_total",
            dimensions: [("endpoint", endpoint.rawValue), ("environment", environment.rawValue), ("status", status)],
            factory: factory
        ).increment()
        appleCalls.withLock {
            $0.counts[
                AppleCallKey(endpoint: endpoint.rawValue, environment: environment.rawValue, status: status),
                default: 0
            ] += 1
        }
    }

    /// A call to Apple (or the simulator) took `duration` and came back with `answer` (`AppleClient` times every
    /// call): `till_apple_call_seconds`, and the last calls the console shows.
    package func appleCallTook(
        endpoint: AppleEndpoint,
        environment: AppStoreEnvironment,
        answer: AppleClient.Answer,
        duration: Duration
    ) {
        Metrics.Timer(
            label: "till_apple_call_seconds",
            dimensions: [("endpoint", endpoint.rawValue), ("environment", environment.rawValue)],
            factory: factory
        ).recordNanoseconds(duration.nanoseconds)
        let summary: String =
            switch answer {
            case .http(let status, _, _): "HTTP \(status)"
            case .transport(let cause): cause
            case .misconfigured: "configuration"
            }
        let call = AppleCall(
            at: Date(),
            endpoint: endpoint.rawValue,
            environment: environment.rawValue,
            answer: summary,
            milliseconds: Double(duration.nanoseconds) / 1e6
        )
        appleCalls.withLock { log in
            log.recent.append(call)
            if log.recent.count > Self.appleCallsKept { log.recent.removeFirst(log.recent.count - Self.appleCallsKept) }
        }
    }

    /// Calls kept for the console.
    static let appleCallsKept = 500

    /// One call to Apple as the console shows it.
    public struct AppleCall: Sendable, Equatable {
        public var at: Date
        public var endpoint: String
        public var environment: String
        /// `HTTP 200`, `timeout`, …
        public var answer: String
        public var milliseconds: Double
    }

    /// An endpoint, environment and answer of `till_apple_calls_total`.
    public struct AppleCallKey: Sendable, Hashable, Comparable {
        public var endpoint: String
        public var environment: String
        public var status: String

        public static func < (a: Self, b: Self) -> Bool {
            (a.endpoint, a.environment, a.status) < (b.endpoint, b.environment, b.status)
        }
    }

    private struct AppleCallLog {
        var counts: [AppleCallKey: Int] = [:]
        var recent: [AppleCall] = []
    }

    private let appleCalls = Mutex(AppleCallLog())

    /// What this process counted in `till_apple_calls_total` since it started, and its last calls to Apple (newest
    /// last), with their latency.
    public func appleCallsSeen() -> (counts: [(AppleCallKey, Int)], recent: [AppleCall]) {
        appleCalls.withLock { log in (log.counts.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }, log.recent) }
    }

    /// An HTTP request was answered. Its counter and timer are looked up once per route and status, as this
    /// runs on every request.
    func request(method: String, route: String, status: Int, duration: Duration) {
        let key = RequestKey(method: method, route: route, status: status)
        let handles =
            requestHandles.withLock { $0[key] }
            ?? {
                let made = RequestHandles(
                    counter: Counter(
                        label: "till_http_requests_total",
                        dimensions: [("method", method), ("route", route), ("status", String(status))],
                        factory: factory
                    ),
                    timer: Metrics.Timer(
                        label: "till_http_request_duration_seconds",
                        dimensions: [("method", method), ("route", route)],
                        factory: factory
                    )
                )
                requestHandles.withLock { $0[key] = made }
                return made
            }()
        handles.counter.increment()
        handles.timer.recordNanoseconds(duration.nanoseconds)
    }

    private struct RequestKey: Hashable {
        var method: String
        var route: String
        var status: Int
    }

    private struct RequestHandles: Sendable {
        var counter: CoreMetrics.Counter
        var timer: Metrics.Timer
    }

    private let requestHandles = Mutex<[RequestKey: RequestHandles]>([:])

    /// An Apple notification was handled: `outcome` is applied, duplicate, ignored or refused.
    package func notification(type: String, outcome: String) {
        Counter(
            label: "till_notifications_total",
            dimensions: [("type", type), ("outcome", outcome)],
            factory: factory
        ).increment()
    }

    /// A catch-up run ended: its outcome, and what it did with each notification and transaction Apple listed.
    package func catchUp(_ run: CatchUpRun) {
        Counter(label: "till_catch_up_runs_total", dimensions: [("outcome", run.outcome.rawValue)], factory: factory)
            .increment()
        for environment in run.environments {
            for (history, result, count) in Self.catchUpCounts(environment) where count > 0 {
                Counter(
                    label: "till_catch_up_\(history)_total",
                    dimensions: [("environment", environment.environment), ("result", result)],
                    factory: factory
                ).increment(by: count)
            }
        }
    }

    /// What a catch-up run did in one environment, by history and result (every result at 0 for none).
    private static func catchUpCounts(_ report: CatchUpEnvironmentReport?) -> [(String, String, Int)] {
        let notifications = report?.notifications
        let transactions = report?.transactions
        return [
            ("notifications", "applied", notifications?.applied ?? 0),
            ("notifications", "duplicate", notifications?.duplicate ?? 0),
            ("notifications", "ignored", notifications?.ignored ?? 0),
            ("notifications", "refused", notifications?.refused ?? 0),
            ("transactions", "recorded", transactions?.recorded ?? 0),
            ("transactions", "revoked", transactions?.revoked ?? 0),
            ("transactions", "updated", transactions?.updated ?? 0),
            ("transactions", "unchanged", transactions?.unchanged ?? 0),
            ("transactions", "unmatched", transactions?.unmatched ?? 0),
            ("transactions", "refused", transactions?.refused ?? 0),
        ]
    }

    /// Attempts of a job ended (the job queue's `JobMetrics`).
    package func jobs(_ kind: JobKind, _ outcome: JobOutcome, count: Int) {
        Counter(
            label: "till_job_attempts_total",
            dimensions: [("kind", kind.rawValue), ("outcome", outcome.rawValue)],
            factory: factory
        ).increment(by: count)
    }

    /// The job queue's depth per kind and state, and how late the oldest queued job of each kind is.
    func recordJobs(_ depth: [(kind: String, state: String, count: Int, oldestDue: Int64?)], now: Int64) {
        for kind in JobKind.allCases.map(\.rawValue) {
            for state in ["queued", "deadLettered"] {
                Gauge(label: "till_jobs", dimensions: [("kind", kind), ("state", state)], factory: factory)
                    .record(depth.first { $0.kind == kind && $0.state == state }?.count ?? 0)
            }
            let oldest = depth.first { $0.kind == kind && $0.state == "queued" }?.oldestDue
            Gauge(label: "till_jobs_oldest_due_seconds", dimensions: [("kind", kind)], factory: factory)
                .record(Double(max(0, now - (oldest ?? now))) / 1000)
        }
    }

    /// A webhook delivery attempt ended (the deliveries' `WebhookMetrics`).
    package func webhookAttempt(_ outcome: WebhookAttemptOutcome, duration: Duration) {
        Counter(label: "till_webhook_attempts_total", dimensions: [("outcome", outcome.rawValue)], factory: factory)
            .increment()
        Metrics.Timer(label: "till_webhook_attempt_seconds", dimensions: [], factory: factory)
            .recordNanoseconds(duration.nanoseconds)
    }

    /// An attempt to answer one of Apple's consumption requests, by where it left the answer.
    package func consumptionAnswer(state: String) {
        Counter(label: "till_consumption_answers_total", dimensions: [("state", state)], factory: factory).increment()
    }

    /// Queue depth per state and the age of the oldest unconfirmed submission.
    func recordQueue(depth: [String: Int], oldestUnconfirmedAge: Duration?) {
        for state in ["pending", "retrying", "deadLettered"] {
            Gauge(label: "till_queue_depth", dimensions: [("state", state)], factory: factory)
                .record(depth[state] ?? 0)
        }
        Gauge(label: "till_queue_oldest_age_seconds", dimensions: [], factory: factory)
            .record(Double(oldestUnconfirmedAge?.nanoseconds ?? 0) / 1e9)
    }

    /// Where storage stands (`StorageGate`): `till_storage_available` (0 during an outage), and since the process
    /// started, `till_storage_outages` (outages begun) and `till_storage_refused` (operations that gave up with
    /// `storageUnavailable`: requests answered 503, and workers' attempts, which retry by themselves).
    /// - Parameters:
    ///   - writerBusy: SQLite's one writer, how long it has held the write lock since the start; nil on PostgreSQL
    ///     (no gauge).
    ///   - walPages: SQLite: pages of 4 KB the commits appended to the write-ahead log since the start; nil on
    ///     PostgreSQL (no gauge).
    func recordStorage(_ status: StorageGate.Status, writerBusy: Duration?, walPages: Int?) {
        Gauge(label: "till_storage_available", dimensions: [], factory: factory).record(status.available ? 1 : 0)
        Gauge(label: "till_storage_outages", dimensions: [], factory: factory)
            .record(status.episodes)
        Gauge(label: "till_storage_refused", dimensions: [], factory: factory).record(status.refused)
        if let writerBusy {
            Gauge(label: "till_sqlite_writer_busy_seconds", dimensions: [], factory: factory)
                .record(Double(writerBusy.nanoseconds) / 1e9)
        }
        if let walPages {
            Gauge(label: "till_sqlite_wal_pages", dimensions: [], factory: factory).record(walPages)
        }
    }

    /// `status 21005` stays, `HTTP 503` stays, transport causes stay; anything else becomes `other`.
    static func coarse(_ status: String) -> String {
        if status.hasPrefix("status ") || status.hasPrefix("HTTP ") {
            return String(status.prefix(while: { $0 != " " })) + " "
                + String(status.split(separator: " ").dropFirst().first ?? "")
        }
        return ["timeout", "connect timeout", "connection closed", "unreadable", "redirect loop", "configuration"]
            .contains(status)
            ? status : "other"
    }

    /// The registry in Prometheus' text exposition format.
    public func emit() -> [UInt8] { registry.emitToBuffer() }
}

extension PurchaseServer {
    /// Reads the queue's depth and age into the gauges, and where storage stands, then prints every metric. While
    /// storage is unavailable the queue's gauges keep their last reading: `/metrics` answers, and says so.
    public func metricsExposition() async throws -> [UInt8] {
        do {
            let depth = try await queueAdmin.depth()
            let oldest = depth.filter { $0.key != .deadLettered }.compactMap(\.value.oldest).min()
            metrics.recordQueue(
                depth: Dictionary(uniqueKeysWithValues: depth.map { ($0.key.rawValue, $0.value.count) }),
                oldestUnconfirmedAge: oldest.map { .milliseconds(max(0, nowMilliseconds - $0)) }
            )
            metrics.recordJobs(
                try await JobStore(database: database).jobDepth().map {
                    ($0.kind.rawValue, $0.state.rawValue, $0.n, $0.oldestDue)
                },
                now: nowMilliseconds
            )
        } catch is StorageUnavailable {}
        metrics.recordStorage(
            database.gate.status,
            writerBusy: database.writerBusy,
            walPages: database.walPagesAppended
        )
        return metrics.emit()
    }
}
