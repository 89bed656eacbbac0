import Foundation
import SQLKit
import TillCore
import TillFormats
import TillStorage

/// Offers (`Offers`, and App Store Connect's admin), their codes and redemptions, and the nonces of offer signatures
/// already used.
struct SimOfferStore: Sendable {
    private static let encoding = SimulatorStore.encoding
    private static let decoding = SimulatorStore.decoding

    private struct OfferRow: Codable {
        var appAppleId: Int64
        var productId: String
        var kind: OfferKind
        var offerIdentifier: String
        var discountType: String
        var duration: String?
        var periods: Int
        var prices: String
        var customCode: String?
        var redemptionLimit: Int?
        var minimumPaidDays: Int?
        var minimumDaysSinceExpiry: Int?
        var maximumDaysSinceExpiry: Int?
        var createdAt: Int64
    }

    func insert(_ offer: SimOffer, on db: any SQLDatabase) async throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let row = OfferRow(
            appAppleId: offer.appAppleId,
            productId: offer.productId,
            kind: offer.kind,
            offerIdentifier: offer.offerIdentifier,
            discountType: offer.discountType.rawValue,
            duration: offer.duration?.description,
            periods: offer.periods,
            prices: String(decoding: try encoder.encode(offer.prices), as: UTF8.self),
            customCode: offer.customCode,
            redemptionLimit: offer.redemptionLimit,
            minimumPaidDays: offer.minimumPaidDays,
            minimumDaysSinceExpiry: offer.minimumDaysSinceExpiry,
            maximumDaysSinceExpiry: offer.maximumDaysSinceExpiry,
            createdAt: offer.createdAt
        )
        try await db.insert(into: "sim_offers").model(row, with: Self.encoding).run()
    }

    func deleteOffer(
        appAppleId: Int64,
        productId: String,
        kind: OfferKind,
        offerIdentifier: String,
        on db: any SQLDatabase
    ) async throws {
        try await db.delete(from: "sim_offers").where("app_apple_id", .equal, appAppleId)
            .where("product_id", .equal, productId).where("kind", .equal, kind.rawValue)
            .where("offer_identifier", .equal, offerIdentifier).run()
    }

    /// The offers of an app, of one product or all.
    func offers(appAppleId: Int64, productId: String? = nil, on db: any SQLDatabase) async throws -> [SimOffer] {
        var query = db.select().column("*").from("sim_offers").where("app_apple_id", .equal, appAppleId)
        if let productId { query = query.where("product_id", .equal, productId) }
        return try await query.orderBy("product_id").orderBy("kind").orderBy("offer_identifier")
            .all(decoding: OfferRow.self, with: Self.decoding).map(Self.offer)
    }

    func offer(
        appAppleId: Int64,
        productId: String,
        kind: OfferKind,
        offerIdentifier: String,
        on db: any SQLDatabase
    ) async throws -> SimOffer? {
        try await db.select().column("*").from("sim_offers").where("app_apple_id", .equal, appAppleId)
            .where("product_id", .equal, productId).where("kind", .equal, kind.rawValue)
            .where("offer_identifier", .equal, offerIdentifier).first(decoding: OfferRow.self, with: Self.decoding)
            .map(Self.offer)
    }

    /// The offer whose custom code this is (custom codes are matched without regard to case, as customers type them).
    func offer(customCode: String, appAppleId: Int64, on db: any SQLDatabase) async throws -> SimOffer? {
        try await offers(appAppleId: appAppleId, on: db).first {
            $0.kind == .offerCode && $0.customCode?.uppercased() == customCode.uppercased()
        }
    }

    private static func offer(_ row: OfferRow) throws -> SimOffer {
        SimOffer(
            appAppleId: row.appAppleId,
            productId: row.productId,
            kind: row.kind,
            offerIdentifier: row.offerIdentifier,
            discountType: OfferDiscountType(rawValue: row.discountType),
            duration: row.duration.flatMap(OfferDuration.init),
            periods: row.periods,
            prices: try JSONDecoder().decode([String: StorefrontPrice].self, from: Data(row.prices.utf8)),
            customCode: row.customCode,
            redemptionLimit: row.redemptionLimit,
            minimumPaidDays: row.minimumPaidDays,
            minimumDaysSinceExpiry: row.minimumDaysSinceExpiry,
            maximumDaysSinceExpiry: row.maximumDaysSinceExpiry,
            createdAt: row.createdAt
        )
    }

    // MARK: One-time-use codes

    func offerCode(_ code: String, on db: any SQLDatabase) async throws -> SimOfferCode? {
        try await db.select().column("*").from("sim_offer_codes").where("code", .equal, code.uppercased())
            .first(decoding: SimOfferCode.self, with: Self.decoding)
    }

    // MARK: Redemptions and signature nonces

    func redemptions(code: String, on db: any SQLDatabase) async throws -> [SimOfferRedemption] {
        try await db.select().column("*").from("sim_offer_redemptions").where("code", .equal, code.uppercased())
            .all(decoding: SimOfferRedemption.self, with: Self.decoding)
    }

    /// Records a signature's nonce; false when it was used before (each signature buys once, even if the buy fails).
    func useNonce(_ nonce: String, appAppleId: Int64, at: Int64, on db: any SQLDatabase) async throws -> Bool {
        let inserted = try await db.raw(
            """
            INSERT INTO sim_signature_nonces (nonce, app_apple_id, used_at)
            VALUES (\(bind: nonce.lowercased()), \(bind: appAppleId), \(bind: at))
            ON CONFLICT (nonce) DO NOTHING RETURNING nonce
            """
        ).all()
        return !inserted.isEmpty
    }
}
