import Foundation
import Logging
import SQLKit
import TillCatalogue
import TillContract
import TillCore
import TillHTTPKit
import TillLedger
import TillStorage

/// Offers the server signs for apps (docs/offers.md): the catalogue of promotional offers it may sign, each with a
/// rule saying who for; the operator's word on a customer's introductory offer; and the signing itself
/// (`Offers+Signing.swift`), decided from the ledger (`OfferRules`) and signed with the app's In-App Purchase key
/// (`OfferSigner`). It never signs for a product or an offer its catalogue does not have.
public struct Offers: Sendable {
    let database: TillDatabase
    /// The customers and their aliases.
    var customerStore: CustomerStore { CustomerStore(database: database) }
    /// The product catalogues.
    let catalogue: Catalogue
    let customers: Customers
    /// The AppTransaction each customer's app sent: its id names a customer the ledger has no purchase of.
    let appTransactions: AppTransactions
    let clock: ServerClock
    let logger: Logger
    /// The customers' timelines: activity, and the reads that find a customer.
    var timelineStore: TimelineStore { TimelineStore(database: database) }

    public typealias Eligibility = Components.Schemas.OfferEligibility

    /// The offers' own tables: promotional offers and the operator's introductory-offer overrides.
    var offerStore: OfferStore { OfferStore(database: database) }

    // MARK: The catalogue of promotional offers

    /// Lets the server sign an offer of a product (an auto-renewable subscription of the catalogue) for the customers
    /// `eligibility` admits; `created` says whether it is new.
    public func putOffer(bundleId: String, productId: String, offerIdentifier: String, eligibility: Eligibility)
        async throws -> (offer: Components.Schemas.Offer, created: Bool)
    {
        guard Self.isOfferIdentifier(offerIdentifier) else {
            throw OfferRefusal(
                .invalidOfferIdentifier,
                "an offer identifier has 1 to 64 printable characters, as App Store Connect sets it up"
            )
        }
        let product = try await subscriptionProduct(bundleId: bundleId, productId: productId)
        let now = clock.milliseconds
        let (record, created) = try await database.transaction { db in
            let existing = try await self.offerStore.offer(
                bundleId: bundleId,
                productId: productId,
                offerIdentifier: offerIdentifier,
                on: db
            )
            let record = OfferRecord(
                bundleId: bundleId,
                productId: productId,
                offerIdentifier: offerIdentifier,
                eligibility: eligibility,
                createdAt: existing?.createdAt ?? now,
                updatedAt: now
            )
            return (record, try await self.offerStore.save(record, on: db))
        }
        return (Self.view(record, product: product), created)
    }

    /// A product's offers, by identifier.
    public func offers(bundleId: String, productId: String, page: PageRequest = PageRequest()) async throws
        -> Page<Components.Schemas.Offer>
    {
        let product = try await product(bundleId: bundleId, productId: productId)
        return Page.of(
            try await offerStore.offers(bundleId: bundleId, productId: productId, on: database.sql).map {
                Self.view($0, product: product)
            },
            key: { PageKey(number: 0, text: $0.offerIdentifier) },
            page
        )
    }

    /// Stops signing an offer.
    public func deleteOffer(bundleId: String, productId: String, offerIdentifier: String) async throws {
        _ = try await product(bundleId: bundleId, productId: productId)
        let deleted = try await database.transaction { db in
            try await self.offerStore.deleteOffer(
                bundleId: bundleId,
                productId: productId,
                offerIdentifier: offerIdentifier,
                on: db
            )
        }
        guard deleted else { throw OfferRefusal(.offerNotFound, "no offer \(offerIdentifier)") }
    }

    // MARK: The operator's word on introductory offers

    /// The override of a customer (aliases resolved) in a subscription group, or `overrideNotFound`.
    public func introductoryOverride(bundleId: String, customerId: String, group: String) async throws
        -> Components.Schemas.IntroductoryOfferOverride
    {
        _ = try await catalogue.app(bundleId: bundleId)
        let owner = try await customerStore.resolve(bundleId: bundleId, customerId: customerId, on: database.sql)
        guard
            let record = try await offerStore.introductoryOverride(
                bundleId: bundleId,
                customerId: owner,
                group: group,
                on: database.sql
            )
        else { throw OfferRefusal(.overrideNotFound, "no override for \(owner) in \(group)") }
        return Self.view(record)
    }

    /// Decides a customer's introductory offer in a subscription group of the catalogue, whatever the ledger says.
    public func setIntroductoryOverride(bundleId: String, customerId: String, group: String, allow: Bool)
        async throws -> Components.Schemas.IntroductoryOfferOverride
    {
        _ = try await catalogue.app(bundleId: bundleId)
        guard OfferRules.groups(in: try await catalogue.products(of: bundleId)).contains(group) else {
            throw OfferRefusal(.subscriptionGroupNotFound, "no subscriptionGroup \(group)")
        }
        let now = clock.milliseconds
        let record = try await database.transaction { db in
            let record = IntroductoryOverrideRecord(
                bundleId: bundleId,
                customerId: try await self.customerStore.resolve(bundleId: bundleId, customerId: customerId, on: db),
                subscriptionGroup: group,
                allowIntroductoryOffer: allow,
                updatedAt: now
            )
            try await self.offerStore.save(record, on: db)
            return record
        }
        return Self.view(record)
    }

    /// Lets the ledger decide again.
    public func deleteIntroductoryOverride(bundleId: String, customerId: String, group: String) async throws {
        _ = try await catalogue.app(bundleId: bundleId)
        let deleted = try await database.transaction { db in
            try await self.offerStore.deleteIntroductoryOverride(
                bundleId: bundleId,
                customerId: try await self.customerStore.resolve(bundleId: bundleId, customerId: customerId, on: db),
                group: group,
                on: db
            )
        }
        guard deleted else { throw OfferRefusal(.overrideNotFound, "no override for \(customerId) in \(group)") }
    }

    // MARK: Helpers

    /// A product of the catalogue, or why there is none: the app is unknown (the catalogue's `appNotFound`), or it has
    /// no such product.
    func product(bundleId: String, productId: String) async throws -> CatalogProduct {
        guard let product = try await catalogue.product(bundleId: bundleId, productId: productId, on: database.sql)
        else {
            throw OfferRefusal(.productNotFound, "no product \(productId) in \(bundleId)")
        }
        return product
    }

    /// A product of the catalogue that is an auto-renewable subscription (the only kind with offers to sign).
    func subscriptionProduct(bundleId: String, productId: String) async throws -> CatalogProduct {
        let product = try await product(bundleId: bundleId, productId: productId)
        guard OfferRules.group(of: product) != nil else {
            throw OfferRefusal(
                .notASubscription,
                "\(productId) is not an auto-renewable subscription: subscription offers are for those only"
            )
        }
        return product
    }

    /// 1 to 64 printable characters.
    static func isOfferIdentifier(_ text: String) -> Bool {
        (1...64).contains(text.unicodeScalars.count)
            && !text.unicodeScalars.contains { CharacterSet.controlCharacters.contains($0) }
            && !text.allSatisfy(\.isWhitespace)
    }

    static func view(_ record: OfferRecord, product: CatalogProduct) -> Components.Schemas.Offer {
        Components.Schemas.Offer(
            bundleId: record.bundleId,
            productId: record.productId,
            subscriptionGroup: OfferRules.group(of: product) ?? product.productId,
            offerIdentifier: record.offerIdentifier,
            eligibility: record.eligibility,
            createdAt: record.createdAt,
            updatedAt: record.updatedAt
        )
    }

    static func view(_ record: IntroductoryOverrideRecord) -> Components.Schemas.IntroductoryOfferOverride {
        Components.Schemas.IntroductoryOfferOverride(
            customerId: record.customerId,
            subscriptionGroup: record.subscriptionGroup,
            allowIntroductoryOffer: record.allowIntroductoryOffer,
            updatedAt: record.updatedAt
        )
    }
}
