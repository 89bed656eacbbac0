import Foundation
import TillCore
import TillFormats

/// An app in the App Store Connect stand-in.
public struct SimApp: Codable, Sendable, Hashable {
    public var appAppleId: Int64
    public var bundleId: String
    public var name: String
    /// The app-specific shared secret verifyReceipt compares with `password`.
    public var sharedSecret: String
    public var notificationUrlProduction: String?
    public var notificationUrlSandbox: String?
    /// Billing grace period in days (0 = off; Apple offers 3, 16 or 28).
    public var gracePeriodDays: Int
    public var createdAt: Int64

    public func notificationURL(for environment: AppStoreEnvironment) -> String? {
        environment == .production ? notificationUrlProduction : notificationUrlSandbox
    }
}

/// An App Store Server API key (the .p8 an App Store Connect user downloads).
struct SimAPIKey: Codable, Sendable {
    var keyId: String
    var appAppleId: Int64
    var issuerId: String
    var publicKeyPem: String
    var createdAt: Int64
}

/// A price in one storefront: milliunits of a currency (9990 = 9.99).
public struct StorefrontPrice: Codable, Sendable, Hashable {
    public var price: Int64
    public var currency: String

    public init(price: Int64, currency: String) {
        self.price = price
        self.currency = currency
    }
}

/// A product's name and description in one locale.
public struct Localization: Codable, Sendable, Hashable {
    public var title: String
    public var description: String

    public init(title: String, description: String) {
        self.title = title
        self.description = description
    }
}

/// An in-app purchase product.
public struct SimProduct: Codable, Sendable, Hashable {
    public var appAppleId: Int64
    public var productId: String
    public var type: ProductType
    public var referenceName: String
    public var reviewState: ReviewState
    public var subscriptionGroup: String?
    public var subscriptionPeriod: SubscriptionPeriod?
    /// Rank inside the subscription group: 1 is the highest level (an upgrade goes to a lower number).
    public var groupLevel: Int
    public var familyShareable: Bool
    /// Keyed by storefront (ISO 3166-1 alpha-3, e.g. `USA`).
    public var prices: [String: StorefrontPrice]
    /// Keyed by locale, e.g. `en-US`.
    public var localizations: [String: Localization]
    public var createdAt: Int64
    /// A 1-year subscription's monthly price with a 12-month commitment, by storefront (`billingPlanType` MONTHLY);
    /// nil when the product offers no such plan. Apple offers it everywhere but the United States and Singapore.
    public var monthlyCommitmentPrices: [String: StorefrontPrice]? = nil
}

/// A customer account: a production Apple ID or a sandbox tester.
public struct SimAccount: Codable, Sendable, Hashable {
    public var id: String
    public var environment: AppStoreEnvironment
    public var email: String
    public var storefront: String
    /// False models the Screen Time "In-App Purchases: Don't Allow" restriction.
    public var canMakePayments: Bool
    /// When set, every payment fails with this StoreKit error code (declined card).
    public var paymentFailure: Int?
    /// Payments wait for a parent's approval (deferred).
    public var askToBuy: Bool
    /// Accounts sharing purchases through Family Sharing.
    public var familyId: String?
    public var deleted: Bool
    public var createdAt: Int64

}

/// A device signed in to an account.
public struct SimDevice: Codable, Sendable, Hashable {
    public var id: String
    public var accountId: String
    public var name: String
    /// `identifierForVendor`, the input of the receipt's device hash.
    public var vendorIdentifier: String
    public var createdAt: Int64
}

/// A payment an app added to the queue.
struct SimPayment: Codable, Sendable {
    var id: String
    var accountId: String
    var deviceId: String
    var appAppleId: Int64
    var environment: AppStoreEnvironment
    var productId: String
    var quantity: Int
    var applicationUsername: String?
    var appAccountToken: String?
    /// purchasing, purchased, failed or deferred.
    var state: QueueTransaction.State
    var errorCode: Int?
    var transactionId: String?
    var createdAt: Int64
    var updatedAt: Int64
}

/// A transaction the store recorded (purchase or renewal).
public struct SimTransaction: Codable, Sendable, Hashable {
    public var transactionId: String
    public var originalTransactionId: String
    public var accountId: String
    public var appAppleId: Int64
    public var productId: String
    public var productType: ProductType
    public var environment: AppStoreEnvironment
    public var quantity: Int
    public var purchaseDate: Int64
    public var originalPurchaseDate: Int64
    public var expiresDate: Int64?
    public var webOrderLineItemId: String?
    public var subscriptionGroup: String?
    public var appAccountToken: String?
    public var ownership: Ownership
    public var price: Int64
    public var currency: String
    public var storefront: String
    public var storefrontId: String
    /// PURCHASE or RENEWAL.
    public var transactionReason: TransactionReason
    public var revocationDate: Int64?
    public var revocationReason: Int?
    public var revocationType: String?
    public var isUpgraded: Bool
    public var offerType: Int?
    public var isTrial: Bool
    public var orderId: String
    public var deviceId: String?
    /// Finished by the app on its purchasing device (finished consumables leave the receipt).
    public var finished: Bool
    /// The modification sequence number: taken from one store-wide counter when the transaction is recorded and
    /// again whenever its signed data changes (refund, revocation, upgrade). History revisions are positions in it
    /// (``HistoryRevision``).
    public var signedSequence: Int64
    public var createdAt: Int64
    /// The offer's identifier (promotional, win-back), or the offer code's reference name; nil for an introductory
    /// offer and without an offer.
    public var offerIdentifier: String? = nil
    /// `FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT` or `ONE_TIME`, with `offerType`.
    public var offerDiscountType: String? = nil
    /// The whole offer's length (ISO 8601), with `offerType`.
    public var offerPeriod: String? = nil
    /// The refunded share of a prorated refund, in milliunits (50000 = 50 %).
    public var revocationPercentage: Int? = nil
    /// `MONTHLY` for a period of a 12-month commitment billed monthly.
    public var billingPlanType: String? = nil
    /// Which month of the commitment this period is (1 to 12), when the commitment ends, and its whole price.
    public var commitmentPeriod: Int? = nil
    public var commitmentExpiresDate: Int64? = nil
    public var commitmentPrice: Int64? = nil

    /// Whether this period is an introductory offer's paid period (`is_in_intro_offer_period`).
    public var isInIntroOfferPeriod: Bool {
        offerType == OfferType.introductoryOffer.rawValue && offerDiscountType != OfferDiscountType.freeTrial.rawValue
    }
}

/// An entry of a device's payment queue.
struct SimQueueEntry: Codable, Sendable {
    var id: String
    var deviceId: String
    var appAppleId: Int64
    var seq: Int64
    /// purchased, failed, deferred or restored.
    var state: QueueTransaction.State
    var transactionId: String?
    /// For restored entries: the identifier of this restore's transaction (the original is `transactionId`).
    var restoredTransactionId: String?
    var paymentId: String?
    var productId: String
    var errorCode: Int?
    var errorMessage: String?
    var finished: Bool
    var deliveries: Int
    var createdAt: Int64
}

/// An auto-renewable subscription of one account in one subscription group.
public struct SimSubscription: Codable, Sendable, Hashable {
    public var originalTransactionId: String
    public var accountId: String
    public var appAppleId: Int64
    public var environment: AppStoreEnvironment
    public var subscriptionGroup: String
    public var productId: String
    public var autoRenewProductId: String
    public var autoRenewStatus: Bool
    public var expiresDate: Int64
    /// The App Store Server API status: 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
    public var status: Int
    public var renewalCount: Int
    public var billingRetry: Bool
    public var gracePeriodExpiresDate: Int64?
    /// When the store gives up retrying the charge.
    public var retryUntil: Int64?
    public var expirationIntent: Int?
    public var lastTransactionId: String
    public var recentStartDate: Int64
    public var updatedAt: Int64
    /// The offer the next renewals get (JSON `AppliedOffer`): the rest of a pay-as-you-go offer, or a promotional
    /// offer or offer code redeemed during a paid period.
    public var offer: String? = nil
    /// What the next renewal charges when no offer applies, in milliunits of the storefront's currency: the price
    /// subscribed at, or the increased price the customer accepted. Nil: the product's current price.
    public var renewalPrice: Int64? = nil
    /// The customer's answer to a price increase: 0 not yet (consent required), 1 consented or only notified.
    public var priceIncreaseStatus: Int? = nil
    /// `MONTHLY` while the subscription runs on a 12-month commitment billed monthly.
    public var billingPlanType: String? = nil
    /// The current month of the commitment (1 to 12) and when the commitment ends.
    public var commitmentPeriod: Int? = nil
    public var commitmentExpiresDate: Int64? = nil
    /// Whether a new commitment starts when this one ends (the customer's cancellation turns it off; the months
    /// committed to still renew).
    public var commitmentAutoRenew: Bool? = nil

    /// Whether the subscription is on a monthly commitment plan.
    var isCommitted: Bool { billingPlanType == BillingPlanType.monthly.rawValue }

    var appliedOffer: AppliedOffer? {
        get { offer.flatMap { try? JSONDecoder().decode(AppliedOffer.self, from: Data($0.utf8)) } }
        set { offer = newValue.flatMap { try? String(decoding: JSONEncoder().encode($0), as: UTF8.self) } }
    }
}

/// An App Store Server Notification and its delivery.
struct SimNotificationRecord: Codable, Sendable {
    var uuid: String
    var appAppleId: Int64
    var environment: AppStoreEnvironment
    var notificationType: String
    var subtype: String?
    var originalTransactionId: String?
    var transactionId: String?
    var signedPayload: String
    var testToken: String?
    var state: NotificationLogEntry.State
    var attempts: Int
    var nextAttemptAt: Int64?
    /// JSON array of `{attemptDate, sendAttemptResult}`.
    var sendAttempts: String
    var createdAt: Int64
}
