import Foundation
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

extension Payments {
    /// StoreKit 2's AppTransaction for the device's account.
    public func signedAppTransaction(deviceId: String, bundleId: String, environment: AppStoreEnvironment) async throws
        -> String
    {
        try await faultsForStoreKit(environment)
        let (device, account) = try await store.requireDevice(deviceId, environment: environment, on: store.sql)
        let app = try await store.requireApp(bundleId: bundleId, on: store.sql)
        return try receipts.signAppTransaction(account: account, device: device, app: app)
    }

    /// StoreKit 2's `Transaction.all`: every transaction of the account for the app, signed (finished consumables excluded).
    public func signedTransactions(deviceId: String, bundleId: String, environment: AppStoreEnvironment) async throws
        -> [String]
    {
        try await faultsForStoreKit(environment)
        let (_, account) = try await store.requireDevice(deviceId, environment: environment, on: store.sql)
        let app = try await store.requireApp(bundleId: bundleId, on: store.sql)
        return try await store.purchases.transactions(
            accountId: account.id,
            appAppleId: app.appAppleId,
            environment: environment,
            on: store.sql
        )
        .filter { !($0.productType == .consumable && $0.finished) }
        .map { try receipts.signTransaction($0, app: app) }
    }

    /// A subscription's renewal info, for a device of the subscribing account.
    public func signedRenewalInfo(deviceId: String, originalTransactionId: String, environment: AppStoreEnvironment)
        async throws -> String
    {
        let (_, account) = try await store.requireDevice(deviceId, environment: environment, on: store.sql)
        guard
            let subscription = try await store.subscriptions.subscription(
                originalTransactionId: originalTransactionId,
                on: store.sql
            ),
            subscription.accountId == account.id
        else { throw PaymentRefusal(.subscriptionNotFound, "no subscription \(originalTransactionId)") }
        let app = try await store.requireApp(appAppleId: subscription.appAppleId, on: store.sql)
        return try await receipts.signRenewalInfo(subscription, app: app, on: store.sql)
    }
}
