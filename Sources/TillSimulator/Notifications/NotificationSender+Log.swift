import Foundation
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

/// A notification as the admin API lists it.
public struct NotificationLogEntry: Codable, Sendable {
    public var notificationUUID: String
    public var notificationType: String
    public var subtype: String?
    public var originalTransactionId: String?
    public var transactionId: String?
    /// Where a notification's delivery stands.
    public enum State: String, Codable, Sendable, Hashable, CaseIterable {
        /// Not delivered yet; attempts go on.
        case pending
        case delivered
        /// Given up (the sandbox does not retry).
        case failed
        /// Not sent: the app has no notification URL for the environment.
        case unsent
    }

    public var state: State
    public var attempts: Int
    public var createdAt: Int64
    public var signedPayload: String
}

extension NotificationSender {
    /// Every notification of an app in an environment, oldest first.
    public func notificationLog(appAppleId: Int64, environment: AppStoreEnvironment) async throws
        -> [NotificationLogEntry]
    {
        _ = try await store.requireApp(appAppleId: appAppleId, on: store.sql)
        return try await store.notifications.notifications(
            appAppleId: appAppleId,
            environment: environment,
            from: 0,
            to: Int64.max,
            on: store.sql
        )
        .map {
            NotificationLogEntry(
                notificationUUID: $0.uuid,
                notificationType: $0.notificationType,
                subtype: $0.subtype,
                originalTransactionId: $0.originalTransactionId,
                transactionId: $0.transactionId,
                state: $0.state,
                attempts: $0.attempts,
                createdAt: $0.createdAt,
                signedPayload: $0.signedPayload
            )
        }
    }
}
