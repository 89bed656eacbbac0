import Foundation
import TillCatalogue
import TillContract
import TillLedger

/// A promotional offer the server may sign for a product, and who for (`srv_offers`).
struct OfferRecord: Codable, Sendable {
    var bundleId: String
    var productId: String
    var offerIdentifier: String
    var eligibility: Components.Schemas.OfferEligibility
    var createdAt: Int64
    var updatedAt: Int64
}

/// The operator's word on a customer's introductory offer in a subscription group (`srv_introductory_overrides`).
struct IntroductoryOverrideRecord: Codable, Sendable {
    var bundleId: String
    var customerId: String
    var subscriptionGroup: String
    var allowIntroductoryOffer: Bool
    var updatedAt: Int64
}
