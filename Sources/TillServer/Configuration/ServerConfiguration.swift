import Crypto
import Foundation
import TillCatalogue
import TillCore
import TillJobs
import TillLedger
import TillStorage
import X509

/// Where Apple (or the simulator standing in for it) answers.
public struct AppleEndpoints: Sendable, Hashable {
    public var verifyReceipt: [AppStoreEnvironment: String]
    public var serverAPI: [AppStoreEnvironment: String]

    public init(verifyReceipt: [AppStoreEnvironment: String], serverAPI: [AppStoreEnvironment: String]) {
        self.verifyReceipt = verifyReceipt
        self.serverAPI = serverAPI
    }

    /// Apple's own endpoints.
    public static let apple = AppleEndpoints(
        verifyReceipt: [
            .production: "https://buy.itunes.apple.com/verifyReceipt",
            .sandbox: "https://sandbox.itunes.apple.com/verifyReceipt",
        ],
        serverAPI: [.production: "https://api.storekit.apple.com", .sandbox: "https://api.storekit-sandbox.apple.com"]
    )

    /// A `till simulator` at `baseURL` (e.g. `http://127.0.0.1:8090`).
    public static func simulator(_ baseURL: String) -> AppleEndpoints {
        AppleEndpoints(
            verifyReceipt: [
                .production: "\(baseURL)/production/verifyReceipt", .sandbox: "\(baseURL)/sandbox/verifyReceipt",
            ],
            serverAPI: [.production: "\(baseURL)/production", .sandbox: "\(baseURL)/sandbox"]
        )
    }
}

/// How the server confirms submissions with Apple.
public struct ConfirmationSettings: Sendable, Hashable {
    /// Attempts before a submission is dead-lettered.
    public var maximumAttempts: Int
    /// Confirmations in flight at once (Apple answers in seconds, so many wait together).
    public var concurrency: Int
    /// How long one call to Apple may take.
    public var requestTimeout: Duration
    /// Back-off: `base × 2^(attempt-1)`, at most `cap`, with ±20% jitter.
    public var backoffBase: Duration
    public var backoffCap: Duration
    /// New attempts start only as fast as the CPU left by acknowledgements allows (`ConfirmationPacer`);
    /// `false` starts them as soon as there is room in `concurrency`.
    public var pacing: Bool
    /// Share of the machine's cores this process may use while answering requests before the pacer counts it
    /// as busy (with `pacing`); 1 leaves only the scheduler's queue as the signal. Other processes never count.
    public var busyCPUShare: Double
    /// The longest a due attempt waits because of pacing: past it, confirmations speed up until the queue
    /// catches up, however busy the process is.
    public var longestPacingDelay: Duration

    public init(
        maximumAttempts: Int = 12,
        concurrency: Int = 64,
        requestTimeout: Duration = .seconds(30),
        backoffBase: Duration = .seconds(2),
        backoffCap: Duration = .seconds(3600),
        pacing: Bool = true,
        busyCPUShare: Double = 0.5,
        longestPacingDelay: Duration = .seconds(30)
    ) {
        self.pacing = pacing
        self.busyCPUShare = busyCPUShare
        self.longestPacingDelay = longestPacingDelay
        self.maximumAttempts = maximumAttempts
        self.concurrency = concurrency
        self.requestTimeout = requestTimeout
        self.backoffBase = backoffBase
        self.backoffCap = backoffCap
    }

    /// The back-off between attempts: doubling from `backoffBase` up to `backoffCap`, ±20%.
    public var retrySchedule: RetrySchedule {
        RetrySchedule(.doubling(base: backoffBase, cap: backoffCap), jitter: 0.2)
    }
}

/// How the server catches up with Apple after downtime or a lost notification (docs/notifications.md, "Catching up").
public struct CatchUpSettings: Sendable, Hashable {
    /// Between two automatic runs (the first is at start); zero turns them off, and only the admin API runs one.
    public var interval: Duration
    /// How far back an app's first run reads Notification History (Apple keeps 180 days).
    public var firstLookBack: Duration
    /// How far before the end of the last complete read the next one starts, so that a notification Apple lists
    /// late is still read; what is read twice is recorded once.
    public var overlap: Duration

    public init(
        interval: Duration = .seconds(3600),
        firstLookBack: Duration = .seconds(7 * 86_400),
        overlap: Duration = .seconds(600)
    ) {
        self.interval = interval
        self.firstLookBack = firstLookBack
        self.overlap = overlap
    }
}

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
        failuresBeforeProbing: Int = 3
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
    }

    /// How long a round's attempts to one endpoint may take in all: each waits for its turn, then has `timeout`.
    var longestBatch: Duration {
        let turns = (batchPerEndpoint + concurrencyPerEndpoint - 1) / concurrencyPerEndpoint
        return timeout * turns
    }

    /// The back-off between attempts: `schedule`'s steps, ±10%.
    public var retrySchedule: RetrySchedule {
        RetrySchedule(.steps(schedule.isEmpty ? Self.standardSchedule : schedule), jitter: 0.1)
    }
}

/// What a verification server is made of.
public struct ServerConfiguration: Sendable {
    public var database: DatabaseConfiguration
    /// How long an operation waits for failing storage to come back before `StorageUnavailable` (a 503).
    public var databaseWait: Duration = .seconds(5)
    /// The bearer token of the admin API.
    public var operatorToken: String
    public var apple: AppleEndpoints
    /// Extra roots trusted for sandbox data only (the simulator's); production trusts Apple's roots alone.
    public var sandboxJWSRoots: [Certificate]
    public var sandboxReceiptRoots: [Certificate]
    public var sandboxReceiptIntermediates: [Certificate]
    public var confirmation: ConfirmationSettings
    public var catchUp: CatchUpSettings
    public var webhooks: WebhookSettings = .init()
    /// Signs download URLs; empty means "made once and kept in the database", so that URLs survive restarts and
    /// every process sharing one database agrees.
    public var serverSecret: [UInt8]
    /// Where uploaded content files are kept.
    public var contentDirectory: String
    public var content: ContentSettings
    /// Signs entitlement snapshots (ES256); nil means "made once and kept in the database", like `serverSecret`,
    /// so that snapshots apps keep on disk verify after restarts and whichever process signed them.
    public var snapshotSigningKey: P256.Signing.PrivateKey?
    /// Keys published in `GET /v1/keys` after the signing key, which do not sign: the next key before a rotation
    /// (so apps know it before the first snapshot it signs), the previous one after it (so the snapshots on
    /// devices keep verifying until they are replaced).
    public var snapshotPublishedKeys: [P256.Signing.PublicKey] = []

    public init(
        database: DatabaseConfiguration = .sqliteInMemory,
        operatorToken: String,
        apple: AppleEndpoints = .apple,
        sandboxJWSRoots: [Certificate] = [],
        sandboxReceiptRoots: [Certificate] = [],
        sandboxReceiptIntermediates: [Certificate] = [],
        confirmation: ConfirmationSettings = .init(),
        catchUp: CatchUpSettings = .init(),
        serverSecret: [UInt8] = [],
        contentDirectory: String = FileManager.default.temporaryDirectory.appendingPathComponent("till-content").path,
        content: ContentSettings = .init(),
        snapshotSigningKey: P256.Signing.PrivateKey? = nil,
        webhooks: WebhookSettings = .init()
    ) {
        self.database = database
        self.operatorToken = operatorToken
        self.apple = apple
        self.sandboxJWSRoots = sandboxJWSRoots
        self.sandboxReceiptRoots = sandboxReceiptRoots
        self.sandboxReceiptIntermediates = sandboxReceiptIntermediates
        self.confirmation = confirmation
        self.catchUp = catchUp
        self.serverSecret = serverSecret
        self.contentDirectory = contentDirectory
        self.content = content
        self.snapshotSigningKey = snapshotSigningKey
        self.webhooks = webhooks
    }
}

extension ServerConfiguration {
    /// Trusts `certificates` for sandbox data only, as `apple.sandbox-roots` gives them: the self-signed ones are
    /// roots (of JWS and of receipts), the others intermediates that complete the chains of receipts, whose
    /// iOS 6-style form carries only its leaf. An intermediate vouches for nothing by itself: a chain through it
    /// must still end at one of the roots.
    public mutating func trustForSandbox(_ certificates: [Certificate]) {
        for certificate in certificates {
            if certificate.subject == certificate.issuer {
                if !sandboxJWSRoots.contains(certificate) { sandboxJWSRoots.append(certificate) }
                if !sandboxReceiptRoots.contains(certificate) { sandboxReceiptRoots.append(certificate) }
            } else if !sandboxReceiptIntermediates.contains(certificate) {
                sandboxReceiptIntermediates.append(certificate)
            }
        }
    }
}
