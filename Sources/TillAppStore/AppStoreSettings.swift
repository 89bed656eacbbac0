import Foundation
import TillCore
import TillJobs
import X509

/// What Apple's side of the server (intake, confirmation, notifications, catch-up and consumption answers) is
/// configured with: where Apple answers, what is trusted for sandbox data, and how confirmations and catch-up run.
/// A part of `ServerConfiguration` (`appStore`), with the same names, so that this side reads only its own settings.
package struct AppStoreSettings: Sendable {
    package var apple: AppleEndpoints
    /// Extra roots trusted for sandbox data only (the simulator's); production trusts Apple's roots alone.
    package var sandboxJWSRoots: [Certificate]
    package var sandboxReceiptRoots: [Certificate]
    package var sandboxReceiptIntermediates: [Certificate]
    package var confirmation: ConfirmationSettings
    package var catchUp: CatchUpSettings
    package var imports: ImportSettings

    package init(
        apple: AppleEndpoints = .apple,
        sandboxJWSRoots: [Certificate] = [],
        sandboxReceiptRoots: [Certificate] = [],
        sandboxReceiptIntermediates: [Certificate] = [],
        confirmation: ConfirmationSettings = .init(),
        catchUp: CatchUpSettings = .init(),
        imports: ImportSettings = .init()
    ) {
        self.apple = apple
        self.sandboxJWSRoots = sandboxJWSRoots
        self.sandboxReceiptRoots = sandboxReceiptRoots
        self.sandboxReceiptIntermediates = sandboxReceiptIntermediates
        self.confirmation = confirmation
        self.catchUp = catchUp
        self.imports = imports
    }
}

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

    /// The wait before the next attempt after `attempt` failed: the back-off, or what Apple asked for (`Retry-After`)
    /// when that is longer. Apple's time counts up to `backoffCap`, so that a far-off or mistaken time holds nothing
    /// for longer than the schedule would (the back-off itself may reach 20% past the cap, its jitter).
    package func delay(afterAttempt attempt: Int, retryAfter: Duration?) -> Duration {
        let backoff = retrySchedule.delay(afterAttempt: attempt)
        guard let retryAfter else { return backoff }
        return max(backoff, min(retryAfter, backoffCap))
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

/// How imports of existing customers ask Apple (docs/operations.md, "Importing existing customers").
public struct ImportSettings: Sendable, Hashable {
    /// Calls to Transaction History a second, per environment, for all of one process's imports. Apple allows an
    /// app 50 a second in production and a tenth of that in the sandbox, and the catch-up shares the budget.
    public var requestsPerSecond: [AppStoreEnvironment: Double]
    /// Rows read at once within an import.
    public var concurrency: Int
    /// Attempts of a row that finds Apple unavailable (no answer, a 5xx) before it is failed; importing the file again
    /// retries it.
    public var maximumAttempts: Int
    /// The wait after such an attempt: doubling from this, at most `backoffCap`, ±20%.
    public var backoffBase: Duration
    public var backoffCap: Duration

    public init(
        requestsPerSecond: [AppStoreEnvironment: Double] = [.production: 40, .sandbox: 4],
        concurrency: Int = 8,
        maximumAttempts: Int = 8,
        backoffBase: Duration = .seconds(5),
        backoffCap: Duration = .seconds(600)
    ) {
        self.requestsPerSecond = requestsPerSecond
        self.concurrency = concurrency
        self.maximumAttempts = maximumAttempts
        self.backoffBase = backoffBase
        self.backoffCap = backoffCap
    }

    /// The back-off between a row's attempts.
    public var retrySchedule: RetrySchedule {
        RetrySchedule(.doubling(base: backoffBase, cap: backoffCap), jitter: 0.2)
    }
}
