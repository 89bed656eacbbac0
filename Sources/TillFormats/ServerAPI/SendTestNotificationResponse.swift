/// The response of Request a Test Notification (`POST /inApps/v1/notifications/test`).
///
/// ```
/// {"testNotificationToken":"ce3af791-365e-4c60-841b-1674b43c1609"}
/// ```
public struct SendTestNotificationResponse: Codable, Sendable, Hashable {
    /// The token to ask for the test notification's status with.
    public var testNotificationToken: String?

    public init(testNotificationToken: String? = nil) {
        self.testNotificationToken = testNotificationToken
    }
}
