import Foundation

/// One attempt to deliver a notification.
///
/// ```
/// {"attemptDate":1698148900000,"sendAttemptResult":"NO_RESPONSE"}
/// ```
public struct SendAttemptItem: Codable, Sendable, Hashable {
    /// When the App Store tried to deliver the notification.
    public var attemptDate: Date?
    public var sendAttemptResult: SendAttemptResult?

    public init(attemptDate: Date? = nil, sendAttemptResult: SendAttemptResult? = nil) {
        self.attemptDate = attemptDate
        self.sendAttemptResult = sendAttemptResult
    }
}
