import TillCore
import TillLedger

/// Which of Apple's services a call asked: the `endpoint` label of `till_apple_calls_total` and
/// `till_apple_call_seconds` (docs/api.md).
package enum AppleEndpoint: String, Sendable, CaseIterable {
    /// The App Store's `verifyReceipt`, production's or the sandbox's.
    case verifyReceipt
    /// The App Store Server API's Get Transaction Info, for a StoreKit 2 purchase's confirmation.
    case serverAPI
    /// The App Store Server API's Get Notification History (the catch-up).
    case notificationHistory
    /// The App Store Server API's Get Transaction History (the catch-up and imports).
    case transactionHistory
    /// The App Store Server API's Send Consumption Information.
    case consumption
}

/// Where Apple's side of the server counts what it does (`/metrics`): submissions, confirmations, calls to Apple,
/// notifications, catch-up runs and consumption answers. A seam because the metrics' registry belongs to the server
/// above this side; `ServerMetrics` is the one in use, and a test may count with its own.
package protocol AppStoreMetrics: Sendable {
    /// A submission was answered: `outcome` is accepted or refused.
    func submission(kind: String, outcome: String, duration: Duration)
    /// A confirmation attempt ended: `result` is confirmed, retrying, rejected or deadLettered; `status` is what Apple
    /// (or the network) said.
    func confirmation(result: String, status: String, duration: Duration)
    /// One call to Apple came back: `endpoint` is the service asked; `status` what it said (`status 21007`,
    /// `HTTP 200`, `timeout`, …).
    func appleCall(endpoint: AppleEndpoint, environment: AppStoreEnvironment, status: String)
    /// A call to Apple took `duration` and came back with `answer` (`AppleClient` times every call).
    func appleCallTook(
        endpoint: AppleEndpoint,
        environment: AppStoreEnvironment,
        answer: AppleClient.Answer,
        duration: Duration
    )
    /// An Apple notification was handled: `outcome` is applied, duplicate, ignored or refused.
    func notification(type: String, outcome: String)
    /// A catch-up run ended.
    func catchUp(_ run: CatchUpRun)
    /// An attempt to answer one of Apple's consumption requests, by where it left the answer.
    func consumptionAnswer(state: String)
}
