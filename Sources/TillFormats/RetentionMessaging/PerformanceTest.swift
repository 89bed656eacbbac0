/// Retention Messaging's performance test (sandbox): the App Store calls the developer's realtime URL many times
/// and reports how fast and how reliably it answered. A production realtime URL needs a passed test.

/// The body of Initiate Performance Test.
public struct PerformanceTestRequest: Codable, Sendable, Hashable {
    /// An active sandbox subscription to send in the test's requests.
    public var originalTransactionId: String?

    public init(originalTransactionId: String?) { self.originalTransactionId = originalTransactionId }
}

/// How a performance test runs.
public struct PerformanceTestConfig: Codable, Sendable, Hashable {
    public var maxConcurrentRequests: Int?
    public var totalRequests: Int?
    /// Milliseconds.
    public var totalDuration: Int64?
    /// Milliseconds an answer may take.
    public var responseTimeThreshold: Int64?
    /// Percent of requests that must succeed.
    public var successRateThreshold: Int?

    public init(
        maxConcurrentRequests: Int?,
        totalRequests: Int?,
        totalDuration: Int64?,
        responseTimeThreshold: Int64?,
        successRateThreshold: Int?
    ) {
        self.maxConcurrentRequests = maxConcurrentRequests
        self.totalRequests = totalRequests
        self.totalDuration = totalDuration
        self.responseTimeThreshold = responseTimeThreshold
        self.successRateThreshold = successRateThreshold
    }
}

/// The answer of Initiate Performance Test.
public struct PerformanceTestResponse: Codable, Sendable, Hashable {
    public var config: PerformanceTestConfig?
    public var requestId: String?

    public init(config: PerformanceTestConfig?, requestId: String?) {
        self.config = config
        self.requestId = requestId
    }
}

/// `PENDING`, `PASS` or `FAIL`.
public struct PerformanceTestStatus: AppleStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let pending: PerformanceTestStatus = "PENDING"
    public static let pass: PerformanceTestStatus = "PASS"
    public static let fail: PerformanceTestStatus = "FAIL"
}

/// Response times of a performance test, in milliseconds.
public struct PerformanceTestResponseTimes: Codable, Sendable, Hashable {
    public var average: Int64?
    public var p50: Int64?
    public var p90: Int64?
    public var p95: Int64?
    public var p99: Int64?

    public init(average: Int64?, p50: Int64?, p90: Int64?, p95: Int64?, p99: Int64?) {
        self.average = average
        self.p50 = p50
        self.p90 = p90
        self.p95 = p95
        self.p99 = p99
    }
}

/// The answer of Get Performance Test Results.
public struct PerformanceTestResultResponse: Codable, Sendable, Hashable {
    public var config: PerformanceTestConfig?
    /// The realtime URL tested.
    public var target: String?
    public var result: PerformanceTestStatus?
    /// Percent of requests answered correctly in time.
    public var successRate: Int?
    public var numPending: Int?
    public var responseTimes: PerformanceTestResponseTimes?
    /// Failures by cause, keyed by `sendAttemptResult` (`TIMED_OUT`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`, …).
    public var failures: [String: Int]?

    public init(
        config: PerformanceTestConfig?,
        target: String?,
        result: PerformanceTestStatus?,
        successRate: Int?,
        numPending: Int?,
        responseTimes: PerformanceTestResponseTimes?,
        failures: [String: Int]?
    ) {
        self.config = config
        self.target = target
        self.result = result
        self.successRate = successRate
        self.numPending = numPending
        self.responseTimes = responseTimes
        self.failures = failures
    }
}
