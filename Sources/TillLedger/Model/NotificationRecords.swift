import Foundation
import TillContract
import TillCore

/// An App Store Server Notification the server received, kept once per `notificationUUID`.
package struct NotificationRecord: Codable, Sendable {
    package var notificationUuid: String
    package var bundleId: String
    package var environment: AppStoreEnvironment
    /// Apple's `notificationType` (`DID_RENEW`, …) and `subtype`, kept as sent.
    package var type: String
    package var subtype: String?
    package var signedDate: Int64?
    package var receivedAt: Int64
    /// What the server did with it (the contract's enum, in Swift and in the row).
    package var outcome: NotificationOutcome
    package var transactionId: String?
    package var originalTransactionId: String?
    /// The customer the notification was applied to (nil when unmatched or not about a purchase).
    package var customerId: String?
    package var detail: String?
    /// The notification as Apple sent it, kept only while it is `unmatched`: once a submission records its
    /// purchase, it is verified again and applied (see `applyWaitingNotifications`).
    package var signedPayload: String?
    /// The notification decoded (`VerifiedNotification.decodedJSON`), for the console; nil before migration 020.
    package var decoded: String? = nil

    package init(
        notificationUuid: String,
        bundleId: String,
        environment: AppStoreEnvironment,
        type: String,
        subtype: String? = nil,
        signedDate: Int64? = nil,
        receivedAt: Int64,
        outcome: NotificationOutcome,
        transactionId: String? = nil,
        originalTransactionId: String? = nil,
        customerId: String? = nil,
        detail: String? = nil,
        signedPayload: String? = nil,
        decoded: String? = nil
    ) {
        self.notificationUuid = notificationUuid
        self.bundleId = bundleId
        self.environment = environment
        self.type = type
        self.subtype = subtype
        self.signedDate = signedDate
        self.receivedAt = receivedAt
        self.outcome = outcome
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.customerId = customerId
        self.detail = detail
        self.signedPayload = signedPayload
        self.decoded = decoded
    }
}

/// The renewal state of one auto-renewable subscription (one original transaction), from the newest signed
/// renewal info Apple sent; older renewal info never overwrites newer.
package struct SubscriptionStateRecord: Codable, Sendable {
    package var environment: AppStoreEnvironment
    package var originalTransactionId: String
    package var bundleId: String
    package var productId: String?
    package var autoRenewProductId: String?
    package var autoRenewStatus: Bool?
    /// Apple's subscription status (1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked).
    package var status: Int?
    package var isInBillingRetry: Bool
    package var gracePeriodExpiresDate: Int64?
    package var expirationIntent: Int?
    package var renewalDate: Int64?
    package var priceIncreaseStatus: Int?
    package var lastNotificationType: String?
    /// When Apple signed the renewal info (or the notification) this state comes from.
    package var signedDate: Int64
    package var updatedAt: Int64
    /// The plan it renews on (`renewalBillingPlanType`), the currency of its renewal prices, and, billed monthly,
    /// its commitment (`commitmentInfo`); nil when the renewal info did not say (or before migration 016).
    package var billingPlanType: String? = nil
    package var currency: String? = nil
    package var commitmentRenewalDate: Int64? = nil
    package var commitmentAutoRenewStatus: Bool? = nil
    package var commitmentAutoRenewProductId: String? = nil
    package var commitmentRenewalBillingPlanType: String? = nil
    package var commitmentRenewalPrice: Int64? = nil

    package init(
        environment: AppStoreEnvironment,
        originalTransactionId: String,
        bundleId: String,
        productId: String? = nil,
        autoRenewProductId: String? = nil,
        autoRenewStatus: Bool? = nil,
        status: Int? = nil,
        isInBillingRetry: Bool,
        gracePeriodExpiresDate: Int64? = nil,
        expirationIntent: Int? = nil,
        renewalDate: Int64? = nil,
        priceIncreaseStatus: Int? = nil,
        lastNotificationType: String? = nil,
        signedDate: Int64,
        updatedAt: Int64,
        billingPlanType: String? = nil,
        currency: String? = nil,
        commitmentRenewalDate: Int64? = nil,
        commitmentAutoRenewStatus: Bool? = nil,
        commitmentAutoRenewProductId: String? = nil,
        commitmentRenewalBillingPlanType: String? = nil,
        commitmentRenewalPrice: Int64? = nil
    ) {
        self.environment = environment
        self.originalTransactionId = originalTransactionId
        self.bundleId = bundleId
        self.productId = productId
        self.autoRenewProductId = autoRenewProductId
        self.autoRenewStatus = autoRenewStatus
        self.status = status
        self.isInBillingRetry = isInBillingRetry
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.expirationIntent = expirationIntent
        self.renewalDate = renewalDate
        self.priceIncreaseStatus = priceIncreaseStatus
        self.lastNotificationType = lastNotificationType
        self.signedDate = signedDate
        self.updatedAt = updatedAt
        self.billingPlanType = billingPlanType
        self.currency = currency
        self.commitmentRenewalDate = commitmentRenewalDate
        self.commitmentAutoRenewStatus = commitmentAutoRenewStatus
        self.commitmentAutoRenewProductId = commitmentAutoRenewProductId
        self.commitmentRenewalBillingPlanType = commitmentRenewalBillingPlanType
        self.commitmentRenewalPrice = commitmentRenewalPrice
    }
}
