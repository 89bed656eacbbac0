import Foundation
import SQLKit
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

/// What the App Store reports that is not a purchase, a renewal or a refund, each sent as Apple sends it:
///
/// - RESCIND_CONSENT: a parent or guardian withdrew consent for a child's use of the app (age assurance);
///   the payload is `appData` with the child's signed AppTransaction, no transaction;
/// - EXTERNAL_PURCHASE_TOKEN (UNREPORTED, CREATED, ACTIVE_TOKEN_REMINDER): an external purchase token;
/// - METADATA_UPDATE, MIGRATION, PRICE_CHANGE: what Apple sends after an Advanced Commerce API call (Change
///   Subscription Metadata, Migrate a Subscription, Change Subscription Price). The Advanced Commerce API itself is
///   not simulated: the admin action stands for the call and sends its notification with the subscription's data.
public struct StoreEvents: Sendable {
    let database: TillDatabase
    let store: SimulatorStore
    let clock: SimulatorClock
    let receipts: Receipts
    let notifications: NotificationSender
}

/// An external purchase token to report (admin API).
public struct ExternalPurchaseTokenInput: Codable, Sendable {
    /// `Sandbox` (the default) or `Production`.
    public var environment: String?
    /// `UNREPORTED` (a token not reported within Apple's deadline), `CREATED` (a custom link token), or
    /// `ACTIVE_TOKEN_REMINDER` (the monthly reminder of an active custom link token).
    public var subtype: String
    /// Custom link tokens: `ACQUISITION` or `SERVICES`.
    public var tokenType: String?
}

/// The Advanced Commerce calls whose notifications the admin API sends.
public enum AdvancedCommerceEvent: String, Codable, Sendable, CaseIterable {
    case metadataUpdate = "metadata-update"
    case migration = "migrate"
    case priceChange = "price-change"

    var notification: NotificationType {
        switch self {
        case .metadataUpdate: .metadataUpdate
        case .migration: .migration
        case .priceChange: .priceChange
        }
    }
}

extension StoreEvents {
    /// A parent withdraws consent for the app on a child's account: RESCIND_CONSENT with `appData`.
    public func rescindConsent(accountId: String, bundleId: String) async throws -> String {
        let uuid = try await database.transaction { db -> String in
            guard let account = try await self.store.appStoreConnect.account(id: accountId, on: db) else {
                throw StoreEventRefusal(.accountNotFound, "no account \(accountId)")
            }
            let app = try await self.store.requireApp(bundleId: bundleId, on: db)
            let environment = account.environment
            guard environment == .sandbox || environment == .production else {
                throw StoreEventRefusal(
                    .wrongEnvironment,
                    "StoreKit Testing in Xcode sends no server notifications; rescind consent on a Sandbox account"
                )
            }
            return try await self.notifications.enqueueNotification(
                app: app,
                environment: environment,
                type: .rescindConsent,
                subtype: nil,
                appData: AppData(
                    appAppleId: environment == .production ? app.appAppleId : nil,
                    bundleId: app.bundleId,
                    environment: environment,
                    signedAppTransactionInfo: try self.receipts.signAppTransaction(
                        account: account,
                        device: nil,
                        app: app
                    )
                ),
                on: db
            )
        }
        notifications.due.signal()
        return uuid
    }

    /// An external purchase token of the app: EXTERNAL_PURCHASE_TOKEN with the token (a sandbox token's id starts
    /// with `SANDBOX`; custom link tokens carry their type and an expiry a year on).
    public func externalPurchaseToken(appAppleId: Int64, _ input: ExternalPurchaseTokenInput) async throws
        -> ExternalPurchaseToken
    {
        let subtypes: [String: NotificationSubtype] = [
            "UNREPORTED": .unreported, "CREATED": .created, "ACTIVE_TOKEN_REMINDER": .activeTokenReminder,
        ]
        guard let subtype = subtypes[input.subtype] else {
            throw StoreEventRefusal(.invalidSubtype, "subtype is UNREPORTED, CREATED or ACTIVE_TOKEN_REMINDER")
        }
        let environment = AppStoreEnvironment(parsing: input.environment ?? "Sandbox") ?? .sandbox
        guard environment == .sandbox || environment == .production else {
            throw StoreEventRefusal(.invalidEnvironment, "environment is Sandbox or Production")
        }
        let customLink = subtype != .unreported
        if customLink {
            guard ["ACQUISITION", "SERVICES"].contains(input.tokenType ?? "") else {
                throw StoreEventRefusal(.invalidTokenType, "a custom link token is ACQUISITION or SERVICES")
            }
        }
        let now = clock.now()
        let token = ExternalPurchaseToken(
            externalPurchaseId: (environment == .sandbox ? "SANDBOX_" : "") + UUID().uuidString.lowercased(),
            tokenCreationDate: now,
            appAppleId: appAppleId,
            bundleId: nil,
            tokenExpirationDate: customLink ? now.addingTimeInterval(365 * 86_400) : nil,
            tokenType: customLink ? input.tokenType : nil
        )
        try await database.transaction { db in
            var token = token
            let app = try await self.store.requireApp(appAppleId: appAppleId, on: db)
            token.bundleId = app.bundleId
            try await self.notifications.enqueueNotification(
                app: app,
                environment: environment,
                type: .externalPurchaseToken,
                subtype: subtype,
                externalPurchaseToken: token,
                on: db
            )
        }
        notifications.due.signal()
        var answered = token
        answered.bundleId = try await store.requireApp(appAppleId: appAppleId, on: store.sql).bundleId
        return answered
    }

    /// Sends what Apple sends after an Advanced Commerce call on a subscription, with its current data.
    public func advancedCommerce(_ event: AdvancedCommerceEvent, originalTransactionId: String) async throws -> String {
        let uuid = try await database.transaction { db -> String in
            guard
                let subscription = try await self.store.subscriptions.subscription(
                    originalTransactionId: originalTransactionId,
                    on: db
                ),
                let latest = try await self.store.purchases.transaction(id: subscription.lastTransactionId, on: db)
            else { throw StoreEventRefusal(.subscriptionNotFound, "no subscription \(originalTransactionId)") }
            let app = try await self.store.requireApp(appAppleId: subscription.appAppleId, on: db)
            return try await self.notifications.enqueueNotification(
                app: app,
                environment: subscription.environment,
                type: event.notification,
                subtype: nil,
                transaction: latest,
                on: db
            )
        }
        notifications.due.signal()
        return uuid
    }
}
