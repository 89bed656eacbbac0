// Values of App Store Server Notifications V2 (apple-formats §4.10) and of their delivery
// history (§4.6 SendAttemptResult). Apple keeps adding notification types and subtypes, so
// every value keeps its raw string.

/// The event an App Store Server Notification V2 reports (`notificationType`).
public struct NotificationType: AppleStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The customer subscribed to a group for the first time, or resubscribed after expiry.
    public static let subscribed: NotificationType = "SUBSCRIBED"
    /// The customer changed the product the subscription renews to (upgrade, downgrade or revert).
    public static let didChangeRenewalPref: NotificationType = "DID_CHANGE_RENEWAL_PREF"
    /// Automatic renewal was turned on or off.
    public static let didChangeRenewalStatus: NotificationType = "DID_CHANGE_RENEWAL_STATUS"
    /// The customer redeemed an offer or offer code.
    public static let offerRedeemed: NotificationType = "OFFER_REDEEMED"
    /// The subscription renewed.
    public static let didRenew: NotificationType = "DID_RENEW"
    /// The subscription expired.
    public static let expired: NotificationType = "EXPIRED"
    /// The subscription failed to renew because of a billing issue.
    public static let didFailToRenew: NotificationType = "DID_FAIL_TO_RENEW"
    /// The billing grace period ended without a renewal.
    public static let gracePeriodExpired: NotificationType = "GRACE_PERIOD_EXPIRED"
    /// A price increase needs, or received, the customer's consent.
    public static let priceIncrease: NotificationType = "PRICE_INCREASE"
    /// The App Store refunded a transaction.
    public static let refund: NotificationType = "REFUND"
    /// The App Store declined a refund request.
    public static let refundDeclined: NotificationType = "REFUND_DECLINED"
    /// The App Store reversed a refund; content should be reinstated.
    public static let refundReversed: NotificationType = "REFUND_REVERSED"
    /// The customer asked for a refund; the App Store asks for consumption information.
    public static let consumptionRequest: NotificationType = "CONSUMPTION_REQUEST"
    /// One subscription's renewal date was extended.
    public static let renewalExtended: NotificationType = "RENEWAL_EXTENDED"
    /// A renewal date extension for all active subscribers finished (or failed for one subscription).
    public static let renewalExtension: NotificationType = "RENEWAL_EXTENSION"
    /// Family Sharing access to a purchase was removed.
    public static let revoke: NotificationType = "REVOKE"
    /// A test notification requested through the App Store Server API.
    public static let test: NotificationType = "TEST"
    /// An external purchase token event (External Purchase API only).
    public static let externalPurchaseToken: NotificationType = "EXTERNAL_PURCHASE_TOKEN"
    /// A purchase of a consumable, non-consumable or non-renewing subscription.
    public static let oneTimeCharge: NotificationType = "ONE_TIME_CHARGE"
    /// The customer withdrew consent to share data; carries `appData`.
    public static let rescindConsent: NotificationType = "RESCIND_CONSENT"
    /// Subscription metadata changed (Advanced Commerce API only).
    public static let metadataUpdate: NotificationType = "METADATA_UPDATE"
    /// A subscription migrated to the Advanced Commerce API.
    public static let migration: NotificationType = "MIGRATION"
    /// A price changed (Advanced Commerce API only).
    public static let priceChange: NotificationType = "PRICE_CHANGE"
}

/// The detail of a notification (`subtype`).
public struct NotificationSubtype: AppleStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The first purchase of a subscription group (or first offer redemption).
    public static let initialBuy: NotificationSubtype = "INITIAL_BUY"
    /// A resubscription after the subscription expired.
    public static let resubscribe: NotificationSubtype = "RESUBSCRIBE"
    /// A downgrade, effective at the next renewal.
    public static let downgrade: NotificationSubtype = "DOWNGRADE"
    /// An upgrade, effective immediately and prorated.
    public static let upgrade: NotificationSubtype = "UPGRADE"
    /// Automatic renewal was turned on.
    public static let autoRenewEnabled: NotificationSubtype = "AUTO_RENEW_ENABLED"
    /// Automatic renewal was turned off.
    public static let autoRenewDisabled: NotificationSubtype = "AUTO_RENEW_DISABLED"
    /// The subscription expired after the customer turned off renewal.
    public static let voluntary: NotificationSubtype = "VOLUNTARY"
    /// The subscription expired because billing retry ended without success.
    public static let billingRetry: NotificationSubtype = "BILLING_RETRY"
    /// The subscription expired because the customer did not consent to a price increase.
    public static let priceIncrease: NotificationSubtype = "PRICE_INCREASE"
    /// The renewal failed, but the billing grace period keeps access.
    public static let gracePeriod: NotificationSubtype = "GRACE_PERIOD"
    /// A price increase awaits the customer's consent.
    public static let pending: NotificationSubtype = "PENDING"
    /// The customer consented to a price increase.
    public static let accepted: NotificationSubtype = "ACCEPTED"
    /// The subscription renewed after earlier failed renewal attempts.
    public static let billingRecovery: NotificationSubtype = "BILLING_RECOVERY"
    /// The subscription expired because the product was not for sale at renewal time.
    public static let productNotForSale: NotificationSubtype = "PRODUCT_NOT_FOR_SALE"
    /// A renewal date extension for all active subscribers finished.
    public static let summary: NotificationSubtype = "SUMMARY"
    /// A renewal date extension failed for one subscription.
    public static let failure: NotificationSubtype = "FAILURE"
    /// An external purchase token was not reported in time.
    public static let unreported: NotificationSubtype = "UNREPORTED"
    /// A reminder about an active external purchase token.
    public static let activeTokenReminder: NotificationSubtype = "ACTIVE_TOKEN_REMINDER"
    /// An external purchase token was created.
    public static let created: NotificationSubtype = "CREATED"
}

/// Why the customer asked for a refund (`consumptionRequestReason`, CONSUMPTION_REQUEST only).
public struct ConsumptionRequestReason: AppleStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The customer did not mean to buy.
    public static let unintendedPurchase: ConsumptionRequestReason = "UNINTENDED_PURCHASE"
    /// The customer did not receive the content.
    public static let fulfillmentIssue: ConsumptionRequestReason = "FULFILLMENT_ISSUE"
    /// The customer is not satisfied with the purchase.
    public static let unsatisfiedWithPurchase: ConsumptionRequestReason = "UNSATISFIED_WITH_PURCHASE"
    /// A legal reason.
    public static let legal: ConsumptionRequestReason = "LEGAL"
    /// Another reason.
    public static let other: ConsumptionRequestReason = "OTHER"
}

/// The outcome of one attempt to deliver a notification (`sendAttemptResult`).
public struct SendAttemptResult: AppleStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The server answered with a success status.
    public static let success: SendAttemptResult = "SUCCESS"
    /// The server did not answer in time.
    public static let timedOut: SendAttemptResult = "TIMED_OUT"
    /// The TLS connection failed.
    public static let tlsIssue: SendAttemptResult = "TLS_ISSUE"
    /// The server redirected in a loop.
    public static let circularRedirect: SendAttemptResult = "CIRCULAR_REDIRECT"
    /// The server sent no response.
    public static let noResponse: SendAttemptResult = "NO_RESPONSE"
    /// A socket error occurred.
    public static let socketIssue: SendAttemptResult = "SOCKET_ISSUE"
    /// The response used an unsupported character set.
    public static let unsupportedCharset: SendAttemptResult = "UNSUPPORTED_CHARSET"
    /// The response was not valid HTTP.
    public static let invalidResponse: SendAttemptResult = "INVALID_RESPONSE"
    /// The connection closed before the response was complete.
    public static let prematureClose: SendAttemptResult = "PREMATURE_CLOSE"
    /// The server answered with a status outside 200–206.
    public static let unsuccessfulHTTPResponseCode: SendAttemptResult = "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
    /// Another failure.
    public static let other: SendAttemptResult = "OTHER"
}
