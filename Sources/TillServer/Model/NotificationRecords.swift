import Foundation
import TillContract
import TillCore

/// An App Store Server Notification the server received, kept once per `notificationUUID`.
struct NotificationRecord: Codable, Sendable {
    var notificationUuid: String
    var bundleId: String
    var environment: String
    /// Apple's `notificationType` (`DID_RENEW`, …) and `subtype`, kept as sent.
    var type: String
    var subtype: String?
    var signedDate: Int64?
    var receivedAt: Int64
    /// What the server did with it (the contract's enum, in Swift and in the row).
    var outcome: NotificationOutcome
    var transactionId: String?
    var originalTransactionId: String?
    /// The customer the notification was applied to (nil when unmatched or not about a purchase).
    var customerId: String?
    var detail: String?
    /// The notification as Apple sent it, kept only while it is `unmatched`: once a submission records its
    /// purchase, it is verified again and applied (see `applyWaitingNotifications`).
    var signedPayload: String?
}

/// The renewal state of one auto-renewable subscription (one original transaction), from the newest signed
/// renewal info Apple sent; older renewal info never overwrites newer.
struct SubscriptionStateRecord: Codable, Sendable {
    var environment: AppStoreEnvironment
    var originalTransactionId: String
    var bundleId: String
    var productId: String?
    var autoRenewProductId: String?
    var autoRenewStatus: Bool?
    /// Apple's subscription status (1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked).
    var status: Int?
    var isInBillingRetry: Bool
    var gracePeriodExpiresDate: Int64?
    var expirationIntent: Int?
    var renewalDate: Int64?
    var priceIncreaseStatus: Int?
    var lastNotificationType: String?
    /// When Apple signed the renewal info (or the notification) this state comes from.
    var signedDate: Int64
    var updatedAt: Int64
    /// The plan it renews on (`renewalBillingPlanType`), the currency of its renewal prices, and, billed monthly,
    /// its commitment (`commitmentInfo`); nil when the renewal info did not say (or before migration 016).
    var billingPlanType: String? = nil
    var currency: String? = nil
    var commitmentRenewalDate: Int64? = nil
    var commitmentAutoRenewStatus: Bool? = nil
    var commitmentAutoRenewProductId: String? = nil
    var commitmentRenewalBillingPlanType: String? = nil
    var commitmentRenewalPrice: Int64? = nil
}
