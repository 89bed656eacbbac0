import TillCore

// Values of the signed transaction, renewal info and AppTransaction payloads
// (apple-formats §4.3–§4.5). Each keeps Apple's raw value, so a value Apple adds later
// decodes and encodes back unchanged.

/// The `type` of a signed transaction: `"Auto-Renewable Subscription"`, `"Non-Consumable"`, ….
public struct TransactionType: AppleStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// An auto-renewable subscription.
    public static let autoRenewableSubscription: TransactionType = "Auto-Renewable Subscription"
    /// A non-consumable in-app purchase.
    public static let nonConsumable: TransactionType = "Non-Consumable"
    /// A consumable in-app purchase.
    public static let consumable: TransactionType = "Consumable"
    /// A non-renewing subscription.
    public static let nonRenewingSubscription: TransactionType = "Non-Renewing Subscription"

    /// The product type this transaction type names; nil for a value Apple has not defined.
    public var productType: ProductType? {
        switch self {
        case .autoRenewableSubscription: .autoRenewable
        case .nonConsumable: .nonConsumable
        case .consumable: .consumable
        case .nonRenewingSubscription: .nonRenewing
        default: nil
        }
    }

    /// The transaction type of a product type; nil for free subscriptions, which StoreKit 2 does not sell.
    public init?(_ productType: ProductType) {
        switch productType {
        case .autoRenewable: self = .autoRenewableSubscription
        case .nonConsumable: self = .nonConsumable
        case .consumable: self = .consumable
        case .nonRenewing: self = .nonRenewingSubscription
        case .freeSubscription: return nil
        }
    }
}

/// Why a transaction happened (`transactionReason`).
public struct TransactionReason: AppleStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The customer bought the product (or a family member's purchase was shared).
    public static let purchase: TransactionReason = "PURCHASE"
    /// The App Store renewed an auto-renewable subscription.
    public static let renewal: TransactionReason = "RENEWAL"
}

/// The kind of subscription offer applied (`offerType`).
public struct OfferType: AppleIntValue {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// An introductory offer.
    public static let introductoryOffer: OfferType = 1
    /// A promotional offer.
    public static let promotionalOffer: OfferType = 2
    /// An offer with a subscription offer code.
    public static let subscriptionOfferCode: OfferType = 3
    /// A win-back offer.
    public static let winBackOffer: OfferType = 4
}

/// How the customer pays for an offer (`offerDiscountType`).
public struct OfferDiscountType: AppleStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A free trial.
    public static let freeTrial: OfferDiscountType = "FREE_TRIAL"
    /// A discounted price paid every period of the offer.
    public static let payAsYouGo: OfferDiscountType = "PAY_AS_YOU_GO"
    /// A discounted price paid once for the whole offer duration.
    public static let payUpFront: OfferDiscountType = "PAY_UP_FRONT"
    /// A one-time discount.
    public static let oneTime: OfferDiscountType = "ONE_TIME"
}

/// Why the App Store refunded a transaction (`revocationReason`; verifyReceipt `cancellation_reason`).
public struct RevocationReason: AppleIntValue {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Refunded for another reason, such as an accidental purchase.
    public static let other: RevocationReason = 0
    /// Refunded because of an actual or perceived issue within the app.
    public static let appIssue: RevocationReason = 1
}

/// How a transaction was revoked (`revocationType`).
public struct RevocationType: AppleStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The whole price was refunded.
    public static let refundFull: RevocationType = "REFUND_FULL"
    /// Part of the price was refunded (see `revocationPercentage`).
    public static let refundProrated: RevocationType = "REFUND_PRORATED"
    /// Access through Family Sharing was removed.
    public static let familyRevoke: RevocationType = "FAMILY_REVOKE"
}

/// Why a subscription expired (`expirationIntent`; verifyReceipt `expiration_intent`).
public struct ExpirationIntent: AppleIntValue {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The customer cancelled the subscription.
    public static let customerCancelled: ExpirationIntent = 1
    /// A billing error, such as an expired payment method.
    public static let billingError: ExpirationIntent = 2
    /// The customer did not consent to a price increase.
    public static let didNotConsentToPriceIncrease: ExpirationIntent = 3
    /// The product was not available for purchase at renewal time.
    public static let productUnavailable: ExpirationIntent = 4
    /// Another reason.
    public static let other: ExpirationIntent = 5
}

/// Whether a subscription will renew (`autoRenewStatus`; verifyReceipt `auto_renew_status`).
public struct AutoRenewStatus: AppleIntValue {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Automatic renewal is turned off.
    public static let off: AutoRenewStatus = 0
    /// The subscription renews at the end of the current period.
    public static let on: AutoRenewStatus = 1
}

/// The customer's answer to a price increase (`priceIncreaseStatus`).
public struct PriceIncreaseStatus: AppleIntValue {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The customer has not yet responded to a price increase that needs consent.
    public static let notResponded: PriceIncreaseStatus = 0
    /// The customer consented, or was notified of an increase that needs no consent.
    public static let consented: PriceIncreaseStatus = 1
}

/// How a subscription with a commitment is billed (`billingPlanType`, `renewalBillingPlanType`).
public struct BillingPlanType: AppleStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The whole commitment is billed up front.
    public static let billedUpfront: BillingPlanType = "BILLED_UPFRONT"
    /// The commitment is billed monthly.
    public static let monthly: BillingPlanType = "MONTHLY"
}

/// The platform the customer first bought the app on (`originalPlatform`).
public struct OriginalPlatform: AppleStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// iOS or iPadOS.
    public static let iOS: OriginalPlatform = "iOS"
    /// macOS.
    public static let macOS: OriginalPlatform = "macOS"
    /// tvOS.
    public static let tvOS: OriginalPlatform = "tvOS"
    /// visionOS.
    public static let visionOS: OriginalPlatform = "visionOS"
}

/// The `receipt_type` of a legacy app receipt (attribute 0, verifyReceipt `receipt.receipt_type`).
public struct LegacyReceiptType: AppleStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// An App Store purchase.
    public static let production: LegacyReceiptType = "Production"
    /// A sandbox purchase (TestFlight, sandbox accounts, App Review).
    public static let productionSandbox: LegacyReceiptType = "ProductionSandbox"
    /// A Volume Purchase Program purchase.
    public static let productionVPP: LegacyReceiptType = "ProductionVPP"
    /// A Volume Purchase Program purchase in the sandbox.
    public static let productionVPPSandbox: LegacyReceiptType = "ProductionVPPSandbox"
    /// A receipt made by StoreKit Testing in Xcode.
    public static let xcode: LegacyReceiptType = "Xcode"

    /// The environment the receipt belongs to; nil for a value Apple has not defined.
    public var environment: AppStoreEnvironment? {
        switch self {
        case .production, .productionVPP: .production
        case .productionSandbox, .productionVPPSandbox: .sandbox
        case .xcode: .xcode
        default: nil
        }
    }
}
