import TillJobs

/// How the server delivers events to the apps' webhook endpoints (docs/events.md, "Delivery").
public struct WebhookSettings: Sendable, Hashable {
    /// Plain HTTP to a loopback host (and connections to loopback addresses): on in development mode, otherwise off.
    public var allowHTTPToLoopback: Bool
    /// Connections to private, loopback and link-local addresses (a receiver on the operator's own network). Checked
    /// on the address actually connected to, after DNS resolution and on every redirect.
    public var allowPrivateAddresses: Bool
    /// How long connecting may take.
    public var connectTimeout: Duration
    /// How long one attempt may take in all, redirects included.
    public var timeout: Duration
    /// How much of each answer's body is kept for the operator.
    public var answerPrefixBytes: Int
    /// How long a delivery is retried before it is dead-lettered.
    public var retryFor: Duration
    /// The delays between attempts, the last one repeated (with ±10% jitter).
    public var schedule: [Duration]
    /// Deliveries under way at once in all (sending, or waiting for their endpoint's turn).
    public var concurrency: Int
    /// Requests under way at once to one endpoint.
    public var concurrencyPerEndpoint: Int
    /// Deliveries one round may send to one endpoint; those beyond `concurrencyPerEndpoint` wait for a turn, and each
    /// attempt's `timeout` runs from its own request.
    public var batchPerEndpoint: Int
    /// Under a steady stream of events, how long a round waits after the one before it, so that what was recorded
    /// meanwhile goes out together (a first event after a quiet time is not held back; a backlog goes out without
    /// waiting). Each round costs two transactions and its wake-ups whatever it sends.
    public var batchWindow: Duration
    /// Consecutive failures after which an endpoint gets one attempt at a time until one succeeds (a receiver that is
    /// down is not asked every retry of every customer at once); the success brings its waiting deliveries forward.
    public var failuresBeforeProbing: Int
    /// Whether the events of an import of existing customers (source `import`) are delivered: off by default, since an
    /// import of a large app would send every past purchase again to a backend that may have it already.
    public var deliverImports: Bool

    /// Standard Webhooks' suggested schedule, stretched to three days: 5 s, 5 min, 30 min, 2 h, 5 h, then 10 h.
    public static let standardSchedule: [Duration] = [
        .seconds(5), .seconds(300), .seconds(1800), .seconds(7200), .seconds(18_000), .seconds(36_000),
    ]

    public init(
        allowHTTPToLoopback: Bool = false,
        allowPrivateAddresses: Bool = false,
        connectTimeout: Duration = .seconds(5),
        timeout: Duration = .seconds(15),
        answerPrefixBytes: Int = 1024,
        retryFor: Duration = .seconds(3 * 86_400),
        schedule: [Duration] = standardSchedule,
        concurrency: Int = 256,
        concurrencyPerEndpoint: Int = 8,
        batchPerEndpoint: Int = 32,
        batchWindow: Duration = .milliseconds(50),
        failuresBeforeProbing: Int = 3,
        deliverImports: Bool = false
    ) {
        self.allowHTTPToLoopback = allowHTTPToLoopback
        self.allowPrivateAddresses = allowPrivateAddresses
        self.connectTimeout = connectTimeout
        self.timeout = timeout
        self.answerPrefixBytes = answerPrefixBytes
        self.retryFor = retryFor
        self.schedule = schedule.isEmpty ? Self.standardSchedule : schedule
        self.concurrency = max(1, concurrency)
        self.concurrencyPerEndpoint = max(1, concurrencyPerEndpoint)
        self.batchPerEndpoint = max(1, batchPerEndpoint)
        self.batchWindow = min(.seconds(1), max(.zero, batchWindow))
        self.failuresBeforeProbing = max(1, failuresBeforeProbing)
        self.deliverImports = deliverImports
    }

    /// How long a round's attempts to one endpoint may take in all: each waits for its turn, then has `timeout`.
    package var longestBatch: Duration {
        let turns = (batchPerEndpoint + concurrencyPerEndpoint - 1) / concurrencyPerEndpoint
        return timeout * turns
    }

    /// The back-off between attempts: `schedule`'s steps, ±10%.
    public var retrySchedule: RetrySchedule {
        RetrySchedule(.steps(schedule.isEmpty ? Self.standardSchedule : schedule), jitter: 0.1)
    }
}
