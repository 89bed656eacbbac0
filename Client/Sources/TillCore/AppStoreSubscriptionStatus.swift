import Foundation

/// The state of an auto-renewable subscription (App Store Server API `status`: 1 active … 5 revoked).
///
/// Forward compatible: an unknown raw value is kept.
public struct AppStoreSubscriptionStatus: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public var rawValue: Int

    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Paid up: the current period has not ended.
    public static let active = AppStoreSubscriptionStatus(rawValue: 1)
    /// Ended, and the store is no longer trying to renew it.
    public static let expired = AppStoreSubscriptionStatus(rawValue: 2)
    /// Renewal failed; the store keeps trying to charge. No access.
    public static let billingRetry = AppStoreSubscriptionStatus(rawValue: 3)
    /// Renewal failed, but the developer's grace period keeps access while the store retries.
    public static let gracePeriod = AppStoreSubscriptionStatus(rawValue: 4)
    /// Refunded or removed from family sharing.
    public static let revoked = AppStoreSubscriptionStatus(rawValue: 5)

    /// Whether the customer has access in this state.
    public var grantsAccess: Bool { self == .active || self == .gracePeriod }

    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(Int.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String {
        switch self {
        case .active: "active"
        case .expired: "expired"
        case .billingRetry: "billingRetry"
        case .gracePeriod: "gracePeriod"
        case .revoked: "revoked"
        default: "unknown(\(rawValue))"
        }
    }

    /// The facts the status of one subscription period is derived from.
    public struct Facts: Sendable, Hashable {
        public var expiresDate: Date
        public var revocationDate: Date?
        public var isInBillingRetryPeriod: Bool
        public var gracePeriodExpiresDate: Date?

        public init(
            expiresDate: Date,
            revocationDate: Date? = nil,
            isInBillingRetryPeriod: Bool = false,
            gracePeriodExpiresDate: Date? = nil
        ) {
            self.expiresDate = expiresDate
            self.revocationDate = revocationDate
            self.isInBillingRetryPeriod = isInBillingRetryPeriod
            self.gracePeriodExpiresDate = gracePeriodExpiresDate
        }
    }

    /// The status of a subscription at `date`, from its latest period.
    ///
    /// Revocation wins over everything; a period not yet over is active; after it, a grace period
    /// that has not ended keeps access; otherwise the store is either still retrying the charge or done.
    public static func evaluate(_ facts: Facts, at date: Date) -> AppStoreSubscriptionStatus {
        if let revoked = facts.revocationDate, revoked <= date { return .revoked }
        if date < facts.expiresDate { return .active }
        if facts.isInBillingRetryPeriod {
            if let grace = facts.gracePeriodExpiresDate, date < grace { return .gracePeriod }
            return .billingRetry
        }
        return .expired
    }
}
