import Foundation
import SQLKit
import TillCatalogue
import TillContract
import TillLedger
import TillStorage

/// The offers the server signs (`Offers`): the catalogue of promotional offers and the operator's word on customers'
/// introductory offers (migration 014-offers).
struct OfferStore: ServerSQLStore {
    let database: TillDatabase

    // MARK: Promotional offers

    /// Writes an offer; answers whether it is new.
    func save(_ offer: OfferRecord, on db: any SQLDatabase) async throws -> Bool {
        let existed = try await self.offer(
            bundleId: offer.bundleId,
            productId: offer.productId,
            offerIdentifier: offer.offerIdentifier,
            on: db
        )
        try await db.raw(
            """
            INSERT INTO srv_offers (bundle_id, product_id, offer_identifier, eligibility, created_at, updated_at)
            VALUES (\(bind: offer.bundleId), \(bind: offer.productId), \(bind: offer.offerIdentifier),
                    \(bind: offer.eligibility.rawValue), \(bind: offer.createdAt), \(bind: offer.updatedAt))
            ON CONFLICT (bundle_id, product_id, offer_identifier) DO UPDATE
            SET eligibility = excluded.eligibility, updated_at = excluded.updated_at
            """
        ).run()
        return existed == nil
    }

    func offer(bundleId: String, productId: String, offerIdentifier: String, on db: any SQLDatabase) async throws
        -> OfferRecord?
    {
        try await db.raw(
            """
            SELECT * FROM srv_offers WHERE bundle_id = \(bind: bundleId) AND product_id = \(bind: productId)
              AND offer_identifier = \(bind: offerIdentifier)
            """
        ).first(decoding: OfferRecord.self, with: Self.decoding)
    }

    func offers(bundleId: String, productId: String, on db: any SQLDatabase) async throws -> [OfferRecord] {
        try await db.raw(
            """
            SELECT * FROM srv_offers WHERE bundle_id = \(bind: bundleId) AND product_id = \(bind: productId)
            ORDER BY offer_identifier
            """
        ).all(decoding: OfferRecord.self, with: Self.decoding)
    }

    /// Deletes an offer; answers whether there was one.
    func deleteOffer(bundleId: String, productId: String, offerIdentifier: String, on db: any SQLDatabase)
        async throws -> Bool
    {
        try await db.raw(
            """
            DELETE FROM srv_offers WHERE bundle_id = \(bind: bundleId) AND product_id = \(bind: productId)
              AND offer_identifier = \(bind: offerIdentifier)
            RETURNING offer_identifier
            """
        ).first() != nil
    }

    // MARK: Introductory offers

    func introductoryOverride(bundleId: String, customerId: String, group: String, on db: any SQLDatabase)
        async throws -> IntroductoryOverrideRecord?
    {
        try await db.raw(
            """
            SELECT * FROM srv_introductory_overrides WHERE bundle_id = \(bind: bundleId)
              AND customer_id = \(bind: customerId) AND subscription_group = \(bind: group)
            """
        ).first(decoding: IntroductoryOverrideRecord.self, with: Self.decoding)
    }

    func save(_ override: IntroductoryOverrideRecord, on db: any SQLDatabase) async throws {
        try await db.raw(
            """
            INSERT INTO srv_introductory_overrides
                (bundle_id, customer_id, subscription_group, allow_introductory_offer, updated_at)
            VALUES (\(bind: override.bundleId), \(bind: override.customerId), \(bind: override.subscriptionGroup),
                    \(bind: override.allowIntroductoryOffer), \(bind: override.updatedAt))
            ON CONFLICT (bundle_id, customer_id, subscription_group) DO UPDATE
            SET allow_introductory_offer = excluded.allow_introductory_offer, updated_at = excluded.updated_at
            """
        ).run()
    }

    /// Deletes an override; answers whether there was one.
    func deleteIntroductoryOverride(bundleId: String, customerId: String, group: String, on db: any SQLDatabase)
        async throws -> Bool
    {
        try await db.raw(
            """
            DELETE FROM srv_introductory_overrides WHERE bundle_id = \(bind: bundleId)
              AND customer_id = \(bind: customerId) AND subscription_group = \(bind: group)
            RETURNING subscription_group
            """
        ).first() != nil
    }
}
