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
    /// pending, delivered, failed, unsent (no URL configured).
    public var state: String
    public var attempts: Int
    public var createdAt: Int64
    public var signedPayload: String
}

extension Simulator {
    var clockView: ClockView {
        ClockView(
            now: clock.nowMilliseconds,
            offsetSeconds: Double(clock.offsetMilliseconds) / 1000,
            renewalRate: clock.rate.description,
            monthSeconds: clock.rate.monthSeconds
        )
    }

    /// Every notification of an app in an environment, oldest first.
    public func notificationLog(appAppleId: Int64, environment: AppStoreEnvironment) async throws
        -> [NotificationLogEntry]
    {
        _ = try await requireApp(appAppleId: appAppleId, on: store.sql)
        return try await store.notifications(
            appAppleId: appAppleId,
            environment: environment.rawValue,
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

    /// StoreKit 2's AppTransaction for the device's account.
    public func signedAppTransaction(deviceId: String, bundleId: String, environment: AppStoreEnvironment) async throws
        -> String
    {
        try await faultsForStoreKit(environment)
        let (device, account) = try await requireDevice(deviceId, environment: environment, on: store.sql)
        let app = try await requireApp(bundleId: bundleId, on: store.sql)
        return try signAppTransaction(account: account, device: device, app: app)
    }

    /// StoreKit 2's `Transaction.all`: every transaction of the account for the app, signed (finished consumables excluded).
    public func signedTransactions(deviceId: String, bundleId: String, environment: AppStoreEnvironment) async throws
        -> [String]
    {
        try await faultsForStoreKit(environment)
        let (_, account) = try await requireDevice(deviceId, environment: environment, on: store.sql)
        let app = try await requireApp(bundleId: bundleId, on: store.sql)
        return try await store.transactions(
            accountId: account.id,
            appAppleId: app.appAppleId,
            environment: environment.rawValue,
            on: store.sql
        )
        .filter { !($0.type == .consumable && $0.finished) }
        .map { try signTransaction($0, app: app) }
    }

    /// A subscription's renewal info, for a device of the subscribing account.
    public func signedRenewalInfo(deviceId: String, originalTransactionId: String, environment: AppStoreEnvironment)
        async throws -> String
    {
        let (_, account) = try await requireDevice(deviceId, environment: environment, on: store.sql)
        guard
            let subscription = try await store.subscription(
                originalTransactionId: originalTransactionId,
                on: store.sql
            ),
            subscription.accountId == account.id
        else { throw TillHTTPError.notFound("subscription", originalTransactionId) }
        let app = try await requireApp(appAppleId: subscription.appAppleId, on: store.sql)
        return try await signRenewalInfo(subscription, app: app, on: store.sql)
    }
}
