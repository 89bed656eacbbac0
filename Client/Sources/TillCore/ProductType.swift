/// The five kinds of in-app product and the rules the store applies to each.
///
/// | type | credited | restored by the store | expires |
/// |---|---|---|---|
/// | consumable | per purchase | never | no (used up) |
/// | non-consumable | once, permanently | yes | never |
/// | auto-renewable subscription | per period | yes | yes, renews within its group |
/// | non-renewing subscription | per purchase | never (the developer syncs it) | yes, expiry set by the developer |
/// | free subscription | once | yes | never |
public enum ProductType: String, Sendable, Hashable, Codable, CaseIterable {
    case consumable
    case nonConsumable
    case autoRenewable
    case nonRenewing
    case freeSubscription

    /// Whether "restore purchases" brings the product back on another device of the same Apple ID.
    public var isRestorable: Bool {
        switch self {
        case .nonConsumable, .autoRenewable, .freeSubscription: true
        case .consumable, .nonRenewing: false
        }
    }

    /// Whether access ends at an expiry date.
    public var expires: Bool {
        switch self {
        case .autoRenewable, .nonRenewing: true
        case .consumable, .nonConsumable, .freeSubscription: false
        }
    }

    /// Whether the store renews the product by itself at the end of each period.
    public var renewsAutomatically: Bool { self == .autoRenewable }

    /// Whether the expiry date comes from the developer's server rather than from the store.
    public var expiryIsSetByDeveloper: Bool { self == .nonRenewing }

    /// Whether every purchase adds to a balance (rather than unlocking something once).
    public var isCreditedPerPurchase: Bool { self == .consumable }

    /// Whether the product can be bought again while the customer already owns it.
    public var canBePurchasedRepeatedly: Bool {
        switch self {
        case .consumable, .nonRenewing: true
        case .nonConsumable, .autoRenewable, .freeSubscription: false
        }
    }

    /// Whether the product belongs to a subscription group (one active subscription per group).
    public var belongsToSubscriptionGroup: Bool { self == .autoRenewable }

    /// Whether a finished purchase stays in the app receipt; finished consumables leave it.
    public var staysInReceiptAfterFinish: Bool { self != .consumable }

    /// Who makes the purchase available on the customer's other devices.
    public var crossDeviceAvailability: CrossDeviceAvailability {
        switch self {
        case .nonConsumable, .autoRenewable, .freeSubscription: .storeRestores
        case .nonRenewing: .developerSyncs
        case .consumable: .developerSyncs
        }
    }

    /// Whether the price is always zero.
    public var isFree: Bool { self == .freeSubscription }
}

/// How a purchase reaches the other devices of the same Apple ID.
public enum CrossDeviceAvailability: String, Sendable, Hashable, Codable {
    /// The store's restore brings the purchase back on any device signed in to the same Apple ID.
    case storeRestores
    /// The store does not restore it: the developer's server keeps it per user and syncs it.
    case developerSyncs
}
