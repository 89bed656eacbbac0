import Foundation

/// One purchase as the store recorded it, whichever format it arrived in
/// (an app receipt's in-app entry, an iOS 6-style transaction receipt, or a StoreKit 2 signed transaction).
public struct PurchaseTransaction: Sendable, Hashable, Codable {
    /// Unique per purchase, restore and renewal.
    public var transactionId: String
    /// The first transaction of the chain (renewals and restores point back to it).
    public var originalTransactionId: String
    public var productId: String
    public var bundleId: String
    /// Nil when the format does not say.
    public var productType: ProductType?
    public var quantity: Int
    public var purchaseDate: Date
    public var originalPurchaseDate: Date?
    /// Subscriptions only.
    public var expiresDate: Date?
    /// Set when the purchase was refunded, revoked or upgraded away.
    public var revocationDate: Date?
    /// 0: refunded for another reason, 1: refunded because of an issue in the app.
    public var revocationReason: Int?
    /// The subscription purchase-event key; nil for other products.
    public var webOrderLineItemId: String?
    public var subscriptionGroupIdentifier: String?
    public var isUpgraded: Bool
    public var isTrialPeriod: Bool
    public var isInIntroOfferPeriod: Bool
    public var offerIdentifier: String?
    public var environment: AppStoreEnvironment
    /// The UUID the app attached to the payment (`appAccountToken` / `applicationUsername`).
    public var appAccountToken: String?
    public var ownership: Ownership
    /// The price in milliunits of `currency` (10990 = 10.99), when the format carries it.
    public var price: Int64?
    public var currency: String?
    /// ISO 3166-1 alpha-3 storefront, e.g. `USA`.
    public var storefront: String?
    /// How the period was billed: `BILLED_UPFRONT`, or `MONTHLY` for a month of a 12-month commitment (StoreKit 2 only).
    public var billingPlanType: String?
    /// The commitment a month billed monthly belongs to.
    public var commitment: Commitment?

    /// A month's place in a subscription billed monthly with a commitment (`commitmentInfo` of a transaction).
    public struct Commitment: Sendable, Hashable, Codable {
        /// Which month of the commitment (1 to `totalBillingPeriods`).
        public var billingPeriodNumber: Int?
        public var totalBillingPeriods: Int?
        /// When the commitment ends; access still ends with the month's `expiresDate`.
        public var expiresDate: Date?

        public init(billingPeriodNumber: Int? = nil, totalBillingPeriods: Int? = nil, expiresDate: Date? = nil) {
            self.billingPeriodNumber = billingPeriodNumber
            self.totalBillingPeriods = totalBillingPeriods
            self.expiresDate = expiresDate
        }
    }

    public init(
        transactionId: String,
        originalTransactionId: String? = nil,
        productId: String,
        bundleId: String,
        productType: ProductType? = nil,
        quantity: Int = 1,
        purchaseDate: Date,
        originalPurchaseDate: Date? = nil,
        expiresDate: Date? = nil,
        revocationDate: Date? = nil,
        revocationReason: Int? = nil,
        webOrderLineItemId: String? = nil,
        subscriptionGroupIdentifier: String? = nil,
        isUpgraded: Bool = false,
        isTrialPeriod: Bool = false,
        isInIntroOfferPeriod: Bool = false,
        offerIdentifier: String? = nil,
        environment: AppStoreEnvironment,
        appAccountToken: String? = nil,
        ownership: Ownership = .purchased,
        price: Int64? = nil,
        currency: String? = nil,
        storefront: String? = nil,
        billingPlanType: String? = nil,
        commitment: Commitment? = nil
    ) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId ?? transactionId
        self.productId = productId
        self.bundleId = bundleId
        self.productType = productType
        self.quantity = quantity
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.revocationDate = revocationDate
        self.revocationReason = revocationReason
        self.webOrderLineItemId = webOrderLineItemId
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.isUpgraded = isUpgraded
        self.isTrialPeriod = isTrialPeriod
        self.isInIntroOfferPeriod = isInIntroOfferPeriod
        self.offerIdentifier = offerIdentifier
        self.environment = environment
        self.appAccountToken = appAccountToken
        self.ownership = ownership
        self.price = price
        self.currency = currency
        self.storefront = storefront
        self.billingPlanType = billingPlanType
        self.commitment = commitment
    }

    /// Whether this is a restore or renewal of an earlier purchase rather than the first one.
    public var isOriginal: Bool { transactionId == originalTransactionId }

    /// Whether the purchase was refunded or revoked.
    public var isRevoked: Bool { revocationDate != nil }

    /// Whether the purchase gives access at `date`: not revoked by then, and not expired for products that expire.
    public func grantsAccess(at date: Date) -> Bool {
        if let revoked = revocationDate, revoked <= date { return false }
        if isUpgraded { return false }
        if let expires = expiresDate { return date < expires }
        if productType?.expires == true { return false }
        return true
    }
}

/// How the customer came to own a purchase.
public struct Ownership: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Bought by this Apple ID.
    public static let purchased = Ownership(rawValue: "PURCHASED")
    /// Shared by a family member through Family Sharing.
    public static let familyShared = Ownership(rawValue: "FAMILY_SHARED")

    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}
