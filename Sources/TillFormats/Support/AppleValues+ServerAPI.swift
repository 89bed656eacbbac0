// Values of App Store Server API requests and responses (apple-formats §4.6, §4.8).

/// Whether an order id was found (`status` of Look Up Order ID).
public struct OrderLookupStatus: AppleIntValue {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The order id is valid and has transactions.
    public static let valid: OrderLookupStatus = 0
    /// The order id is invalid.
    public static let invalid: OrderLookupStatus = 1
}

/// Why a subscription renewal date is extended (`extendReasonCode`).
public struct ExtendReasonCode: AppleIntValue {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// No reason given.
    public static let undeclared: ExtendReasonCode = 0
    /// For customer satisfaction.
    public static let customerSatisfaction: ExtendReasonCode = 1
    /// Another reason.
    public static let other: ExtendReasonCode = 2
    /// Because of a service issue or outage.
    public static let serviceIssueOrOutage: ExtendReasonCode = 3
}

/// The `productType` filter of Get Transaction History.
public struct TransactionHistoryProductType: AppleStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Auto-renewable subscriptions.
    public static let autoRenewable: TransactionHistoryProductType = "AUTO_RENEWABLE"
    /// Non-renewing subscriptions.
    public static let nonRenewable: TransactionHistoryProductType = "NON_RENEWABLE"
    /// Consumables.
    public static let consumable: TransactionHistoryProductType = "CONSUMABLE"
    /// Non-consumables.
    public static let nonConsumable: TransactionHistoryProductType = "NON_CONSUMABLE"

    /// The values Apple defines; others are rejected with `invalidProductType`.
    public static let known: [TransactionHistoryProductType] = [
        .autoRenewable, .nonRenewable, .consumable, .nonConsumable,
    ]
}

/// The `sort` order of Get Transaction History (by modification date).
public struct TransactionHistoryOrder: AppleStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Oldest first (the default).
    public static let ascending: TransactionHistoryOrder = "ASCENDING"
    /// Newest first.
    public static let descending: TransactionHistoryOrder = "DESCENDING"

    /// The values Apple defines; others are rejected with `invalidSort`.
    public static let known: [TransactionHistoryOrder] = [.ascending, .descending]
}

/// Whether the app delivered a purchase the customer asks a refund for (Send Consumption Information v2 `deliveryStatus`).
public struct DeliveryStatus: AppleStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The app delivered the purchase and it works.
    public static let delivered: DeliveryStatus = "DELIVERED"
    /// Not delivered because of a quality issue.
    public static let undeliveredQualityIssue: DeliveryStatus = "UNDELIVERED_QUALITY_ISSUE"
    /// The wrong item was delivered.
    public static let undeliveredWrongItem: DeliveryStatus = "UNDELIVERED_WRONG_ITEM"
    /// Not delivered because of a server outage.
    public static let undeliveredServerOutage: DeliveryStatus = "UNDELIVERED_SERVER_OUTAGE"
    /// Not delivered for another reason.
    public static let undeliveredOther: DeliveryStatus = "UNDELIVERED_OTHER"
}

/// The developer's wish about a refund request (Send Consumption Information v2 `refundPreference`).
public struct RefundPreference: AppleStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Decline the refund.
    public static let decline: RefundPreference = "DECLINE"
    /// Grant a full refund.
    public static let grantFull: RefundPreference = "GRANT_FULL"
    /// Grant a prorated refund.
    public static let grantProrated: RefundPreference = "GRANT_PRORATED"
}

/// How much of a purchase the customer used (Send Consumption Information v1 `consumptionStatus`).
public struct ConsumptionStatus: AppleIntValue {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Not declared.
    public static let undeclared: ConsumptionStatus = 0
    /// Not consumed.
    public static let notConsumed: ConsumptionStatus = 1
    /// Partially consumed.
    public static let partiallyConsumed: ConsumptionStatus = 2
    /// Fully consumed.
    public static let fullyConsumed: ConsumptionStatus = 3
}

/// The platform the customer used the purchase on (Send Consumption Information v1 `platform`).
public struct ConsumptionPlatform: AppleIntValue {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Not declared.
    public static let undeclared: ConsumptionPlatform = 0
    /// An Apple platform.
    public static let apple: ConsumptionPlatform = 1
    /// A non-Apple platform.
    public static let nonApple: ConsumptionPlatform = 2
}

/// Whether the app delivered a purchase (Send Consumption Information v1 `deliveryStatus`, 0–5).
public struct DeliveryStatusV1: AppleIntValue {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Delivered and working.
    public static let deliveredAndWorking: DeliveryStatusV1 = 0
    /// Not delivered because of a quality issue.
    public static let didNotDeliverQualityIssue: DeliveryStatusV1 = 1
    /// The wrong item was delivered.
    public static let deliveredWrongItem: DeliveryStatusV1 = 2
    /// Not delivered because of a server outage.
    public static let didNotDeliverServerOutage: DeliveryStatusV1 = 3
    /// Not delivered because of an in-game currency change.
    public static let didNotDeliverInGameCurrencyChange: DeliveryStatusV1 = 4
    /// Not delivered for another reason.
    public static let didNotDeliverOther: DeliveryStatusV1 = 5
}

/// The customer's account status in the app (Send Consumption Information v1 `userStatus`).
public struct UserStatus: AppleIntValue {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Not declared.
    public static let undeclared: UserStatus = 0
    /// The account is active.
    public static let active: UserStatus = 1
    /// The account is suspended.
    public static let suspended: UserStatus = 2
    /// The account is terminated.
    public static let terminated: UserStatus = 3
    /// The account has limited access.
    public static let limitedAccess: UserStatus = 4
}

/// The developer's wish about a refund request (Send Consumption Information v1 `refundPreference`).
public struct RefundPreferenceV1: AppleIntValue {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Not declared.
    public static let undeclared: RefundPreferenceV1 = 0
    /// Grant the refund.
    public static let preferGrant: RefundPreferenceV1 = 1
    /// Decline the refund.
    public static let preferDecline: RefundPreferenceV1 = 2
    /// No preference.
    public static let noPreference: RefundPreferenceV1 = 3
}
