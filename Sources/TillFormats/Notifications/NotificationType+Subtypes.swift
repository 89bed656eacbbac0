extension NotificationType {
    /// The notification types Apple documents.
    public static let known: [NotificationType] = [
        .subscribed, .didChangeRenewalPref, .didChangeRenewalStatus, .offerRedeemed, .didRenew, .expired,
        .didFailToRenew, .gracePeriodExpired, .priceIncrease, .refund, .refundDeclined, .refundReversed,
        .consumptionRequest, .renewalExtended, .renewalExtension, .revoke, .test, .externalPurchaseToken,
        .oneTimeCharge, .rescindConsent, .metadataUpdate, .migration, .priceChange,
    ]

    /// Whether Apple documents this notification type.
    public var isKnown: Bool { Self.known.contains(self) }

    /// The subtypes Apple sends with this type (empty when it sends none, or the type is unknown).
    public var knownSubtypes: [NotificationSubtype] {
        switch self {
        case .subscribed: [.initialBuy, .resubscribe]
        case .didChangeRenewalPref: [.upgrade, .downgrade]
        case .didChangeRenewalStatus: [.autoRenewEnabled, .autoRenewDisabled]
        case .offerRedeemed: [.initialBuy, .resubscribe, .upgrade, .downgrade]
        case .didRenew: [.billingRecovery]
        case .expired: [.voluntary, .billingRetry, .priceIncrease, .productNotForSale]
        case .didFailToRenew: [.gracePeriod]
        case .priceIncrease: [.pending, .accepted]
        case .renewalExtension: [.summary, .failure]
        case .externalPurchaseToken: [.unreported, .activeTokenReminder, .created]
        default: []
        }
    }

    /// Whether Apple sends this type without a subtype.
    ///
    /// False for the types that always carry one (SUBSCRIBED, DID_CHANGE_RENEWAL_STATUS,
    /// PRICE_INCREASE, RENEWAL_EXTENSION, EXTERNAL_PURCHASE_TOKEN); true for unknown types.
    public var allowsMissingSubtype: Bool {
        switch self {
        case .subscribed, .didChangeRenewalStatus, .priceIncrease, .renewalExtension, .externalPurchaseToken: false
        default: true
        }
    }

    /// Whether `subtype` is a combination Apple sends with this type. Unknown types and unknown
    /// subtypes are accepted, so that notifications Apple adds later are not refused.
    public func accepts(subtype: NotificationSubtype?) -> Bool {
        guard isKnown else { return true }
        guard let subtype else { return allowsMissingSubtype }
        return knownSubtypes.contains(subtype) || !NotificationSubtype.known.contains(subtype)
    }
}

extension NotificationSubtype {
    /// The notification subtypes Apple documents.
    public static let known: [NotificationSubtype] = [
        .initialBuy, .resubscribe, .downgrade, .upgrade, .autoRenewEnabled, .autoRenewDisabled, .voluntary,
        .billingRetry, .priceIncrease, .gracePeriod, .pending, .accepted, .billingRecovery, .productNotForSale,
        .summary, .failure, .unreported, .activeTokenReminder, .created,
    ]
}
