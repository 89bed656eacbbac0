import Foundation
import Logging
import SQLKit
import TillCore
import TillFormats
import TillStorage

/// Retention Messaging's performance test (sandbox only): the App Store sends the developer's sandbox realtime URL
/// a burst of signed requests for one active subscription and reports how many were answered correctly in time.
/// Apple does not publish its test's figures; the simulator's are `PerformanceTestConfig.simulator(threshold:)`, with
/// the realtime deadline customers get as its response-time threshold, and a test passes when the share of correct
/// answers within the threshold reaches `successRateThreshold`.
extension RetentionMessaging {
    func initiatePerformanceTest(body: [UInt8], app: SimApp, environment: AppStoreEnvironment) async throws
        -> PerformanceTestResponse
    {
        // The endpoint exists on the sandbox host only.
        guard environment == .sandbox else { throw ServerAPIFailure(status: 404, error: nil) }
        guard let request = try? TillFormatsJSON.decoder.decode(PerformanceTestRequest.self, from: Data(body)),
            let originalTransactionId = request.originalTransactionId
        else { throw ServerAPIFailure(.invalidPerformanceTestRequest) }
        guard ServerAPI.isTransactionId(originalTransactionId) else { throw ServerAPIFailure(.invalidTransactionId) }
        guard let tx = try await store.purchases.transaction(id: originalTransactionId, on: store.sql),
            tx.appAppleId == app.appAppleId, tx.environment == environment
        else {
            let isAppTransaction = try await store.purchases.customers(
                appAppleId: app.appAppleId,
                environment: environment,
                on: store.sql
            ).contains { receipts.appTransactionId(accountId: $0, app: app) == originalTransactionId }
            throw ServerAPIFailure(isAppTransaction ? .appTransactionIdNotSupported : .transactionIdNotFound)
        }
        guard tx.ownership != .familyShared else {
            throw ServerAPIFailure(.familyTransactionNotSupported)
        }
        guard tx.originalTransactionId == tx.transactionId else {
            throw ServerAPIFailure(.transactionIdNotOriginalTransactionId)
        }
        guard
            let subscription = try await store.subscriptions.subscription(
                originalTransactionId: tx.transactionId,
                on: store.sql
            ),
            subscription.status == AppStoreSubscriptionStatus.active.rawValue,
            let url = try await store.retention.realtimeURL(
                appAppleId: app.appAppleId,
                environment: environment,
                on: store.sql
            )
        else { throw ServerAPIFailure(.invalidPerformanceTestRequest) }
        let config = PerformanceTestConfig.simulator(threshold: configuration.realtimeTimeout)
        let test = try await database.transaction { db -> SimPerformanceTest in
            let running = try await self.store.retention.performanceTests(
                appAppleId: app.appAppleId,
                environment: environment,
                on: db
            ).contains { $0.result == .pending }
            guard !running else { throw ServerAPIFailure(.existingPerformanceTestRun) }
            let test = SimPerformanceTest(
                requestId: UUID().uuidString.lowercased(),
                appAppleId: app.appAppleId,
                environment: environment,
                originalTransactionId: tx.transactionId,
                target: url,
                result: .pending,
                summary: String(decoding: try TillFormatsJSON.encoder.encode(config), as: UTF8.self),
                createdAt: self.clock.nowMilliseconds
            )
            try await self.store.insert(test, on: db)
            return test
        }
        let room = self
        Task.detached {
            do {
                try await room.run(test, subscription: subscription, app: app, config: config)
            } catch {
                room.logger.warning("performance test \(test.requestId) stopped: \(error)")
            }
        }
        return PerformanceTestResponse(config: config, requestId: test.requestId)
    }

    /// Sends the test's requests, at most `maxConcurrentRequests` at a time, then records PASS or FAIL.
    private func run(
        _ test: SimPerformanceTest,
        subscription: SimSubscription,
        app: SimApp,
        config: PerformanceTestConfig
    ) async throws {
        let total = config.totalRequests ?? 0
        let width = max(1, config.maxConcurrentRequests ?? 1)
        let timeout = Duration.milliseconds(config.responseTimeThreshold ?? 700)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<total {
                if index >= width { try await group.next() }
                group.addTask {
                    _ = try await self.callRealtimeURL(
                        test.target,
                        app: app,
                        subscription: subscription,
                        locale: "en-US",
                        performanceTestId: test.requestId,
                        timeout: timeout
                    )
                }
            }
            try await group.waitForAll()
        }
        var finished = test
        finished.result =
            Self.verdict(
                try await store.retention.retentionRequests(performanceTestId: test.requestId, on: store.sql),
                config: config
            )
        try await store.update(finished, on: store.sql)
    }

    /// Get Performance Test Results: PENDING while requests are out, then PASS or FAIL with the response times and
    /// the failures by cause. A test the simulator stopped running (a restart) ends at its `totalDuration`, its
    /// unanswered requests counted as `NO_RESPONSE`.
    func performanceTestResults(_ requestId: String, app: SimApp, environment: AppStoreEnvironment) async throws
        -> PerformanceTestResultResponse
    {
        guard UUID(uuidString: requestId) != nil else { throw ServerAPIFailure(.invalidRequestId) }
        guard let test = try await store.retention.performanceTest(requestId: requestId.lowercased(), on: store.sql),
            test.appAppleId == app.appAppleId, test.environment == environment
        else { throw ServerAPIFailure(.performanceTestRunNotFound) }
        let config =
            (try? TillFormatsJSON.decoder.decode(PerformanceTestConfig.self, from: Data((test.summary ?? "").utf8)))
            ?? .simulator(threshold: configuration.realtimeTimeout)
        var requests = try await store.retention.retentionRequests(performanceTestId: test.requestId, on: store.sql)
        let total = config.totalRequests ?? requests.count
        let overdue = clock.nowMilliseconds > test.createdAt + (config.totalDuration ?? 60_000)
        var result = test.result
        if result == .pending && overdue {
            requests = requests.map { request in
                var request = request
                if request.outcome == .pending { request.outcome = .noResponse }
                return request
            }
            result = Self.verdict(requests, config: config)
        }
        let done = requests.filter { $0.outcome != .pending }
        let durations = done.compactMap(\.durationMs).sorted()
        func percentile(_ p: Double) -> Int64? {
            durations.isEmpty ? nil : Int64(durations[min(durations.count - 1, Int(Double(durations.count) * p))])
        }
        var failures: [String: Int] = [:]
        for request in done where !Self.succeeded(request, config: config) {
            let cause: SendAttemptResult = request.outcome == .success ? .timedOut : request.outcome
            failures[cause.rawValue, default: 0] += 1
        }
        if result != .pending, done.count < total {
            failures[SendAttemptResult.noResponse.rawValue, default: 0] += total - done.count
        }
        return PerformanceTestResultResponse(
            config: config,
            target: test.target,
            result: result,
            successRate: done.isEmpty ? 0 : done.filter { Self.succeeded($0, config: config) }.count * 100 / done.count,
            numPending: result == .pending ? max(0, total - done.count) : 0,
            responseTimes: PerformanceTestResponseTimes(
                average: durations.isEmpty ? nil : Int64(durations.reduce(0, +) / durations.count),
                p50: percentile(0.5),
                p90: percentile(0.9),
                p95: percentile(0.95),
                p99: percentile(0.99)
            ),
            failures: failures
        )
    }

    /// A request succeeded when the developer answered a valid realtime response within the threshold.
    static func succeeded(_ request: SimRetentionRequest, config: PerformanceTestConfig) -> Bool {
        request.outcome == .success && Int64(request.durationMs ?? .max) <= (config.responseTimeThreshold ?? 700)
    }

    static func verdict(_ requests: [SimRetentionRequest], config: PerformanceTestConfig) -> PerformanceTestStatus {
        let total = max(requests.count, config.totalRequests ?? 0)
        guard total > 0 else { return .fail }
        let correct = requests.filter { succeeded($0, config: config) }.count
        return correct * 100 >= total * (config.successRateThreshold ?? 100) ? .pass : .fail
    }
}

extension PerformanceTestConfig {
    /// The simulator's test: 20 requests, 5 at a time, each answered within `threshold` (the realtime deadline:
    /// Apple's 700 ms unless configured otherwise), 95 % of them correct, within a minute.
    static func simulator(threshold: Duration) -> PerformanceTestConfig {
        PerformanceTestConfig(
            maxConcurrentRequests: 5,
            totalRequests: 20,
            totalDuration: 60_000,
            responseTimeThreshold: Int64(threshold.milliseconds),
            successRateThreshold: 95
        )
    }
}
