import Foundation
import TillCore

/// Consumption information a developer sent with Send Consumption Information (v1 or v2), kept as sent.
public struct SimConsumptionInfo: Codable, Sendable, Hashable {
    public var id: String
    public var transactionId: String
    public var appAppleId: Int64
    public var environment: AppStoreEnvironment
    /// 1 (`/inApps/v1/transactions/consumption`) or 2 (`/inApps/v2/…`).
    public var version: Int
    /// The request body, as JSON.
    public var body: String
    /// When the CONSUMPTION_REQUEST it answers was sent; nil when Apple had not asked.
    public var requestedAt: Int64?
    public var receivedAt: Int64
}

/// One subscription's renewal-date extension: asked for alone, or as part of a mass extension.
struct SimRenewalExtension: Codable, Sendable, Hashable {
    var requestIdentifier: String
    var originalTransactionId: String
    var appAppleId: Int64
    var environment: AppStoreEnvironment
    /// The mass extension this belongs to; nil for Extend a Subscription Renewal Date.
    var massRequestIdentifier: String?
    var extendByDays: Int
    var extendReasonCode: Int
    var succeeded: Bool
    var webOrderLineItemId: String?
    /// The new renewal date (succeeded extensions only).
    var effectiveDate: Int64?
    var createdAt: Int64
}

/// Extend Subscription Renewal Dates for All Active Subscribers: one request, worked through in the background.
struct SimMassExtension: Codable, Sendable, Hashable {
    var requestIdentifier: String
    var appAppleId: Int64
    var environment: AppStoreEnvironment
    var productId: String
    /// JSON array of storefronts (ISO 3166-1 alpha-3); empty for every storefront.
    var storefrontCountryCodes: String
    var extendByDays: Int
    var extendReasonCode: Int
    var complete: Bool
    var completeDate: Int64?
    var succeededCount: Int
    var failedCount: Int
    var createdAt: Int64

    var storefronts: [String] {
        (try? JSONDecoder().decode([String].self, from: Data(storefrontCountryCodes.utf8))) ?? []
    }
}
