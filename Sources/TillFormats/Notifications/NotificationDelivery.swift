/// How the App Store delivers Server Notifications V2: `POST` of a ``ResponseBodyV2`` to the
/// configured HTTPS URL, retried when the receiver does not acknowledge it.
public enum NotificationDelivery {
    /// The HTTP statuses that acknowledge a notification; any other answer (or none) means "retry".
    public static let successStatuses: ClosedRange<Int> = 200...206

    /// Whether a receiver's HTTP status acknowledges the notification.
    public static func isAcknowledged(httpStatus: Int) -> Bool { successStatuses.contains(httpStatus) }

    /// The delays of the production retries, each after the previous attempt: 1, 12, 24, 48 and 72 hours.
    /// The sandbox sends once.
    public static let productionRetryDelays: [Duration] = [1, 12, 24, 48, 72].map { .seconds($0 * 3600) }

    /// The notification format version Apple writes in `version`.
    public static let version = "2.0"
}
