import Crypto
import Foundation
import Logging
import SQLKit
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillStorage

extension CatalogProductInput {
    /// A product input with TillCore's product type and plain credits, as the command line and tests write one.
    public init(
        type: ProductType,
        title: String? = nil,
        entitlements: [String]? = nil,
        credits: [String: Int64]? = nil,
        subscriptionGroup: String? = nil,
        durationSeconds: Int64? = nil,
        price: Int64? = nil,
        currency: String? = nil,
        position: Int? = nil
    ) {
        self.init(
            _type: Components.Schemas.ProductType(type),
            title: title,
            entitlements: entitlements,
            credits: credits.map { Components.Schemas.Credits($0) },
            subscriptionGroup: subscriptionGroup,
            durationSeconds: durationSeconds,
            price: price,
            currency: currency,
            position: position
        )
    }
}

extension Components.Schemas.Product {
    /// A catalogue product as the admin API shows it.
    package init(_ product: CatalogProduct) {
        self.init(
            bundleId: product.bundleId,
            productId: product.productId,
            _type: Components.Schemas.ProductType(product.type),
            title: product.title,
            entitlements: product.entitlements,
            credits: Components.Schemas.Credits(product.credits),
            content: product.content,
            subscriptionGroup: product.subscriptionGroup,
            durationSeconds: product.durationSeconds,
            price: product.price,
            currency: product.currency,
            position: product.position,
            createdAt: product.createdAt,
            updatedAt: product.updatedAt
        )
    }
}

extension Catalogue {
    /// The largest price a product may book: 10^12 milliunits (a billion of its currency), so that sums of them in the
    /// figures cannot wrap.
    public static let largestPrice: Int64 = 1_000_000_000_000

    /// Whether `code` has the shape of an ISO 4217 currency code (three capital letters).
    static func isCurrencyCode(_ code: String) -> Bool {
        code.utf8.count == 3 && code.utf8.allSatisfy { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
    }

    /// Creates or replaces a product of the catalogue; `created` says which (the admin API answers 201 or 200).
    @discardableResult
    public func putProduct(bundleId: String, productId: String, _ input: CatalogProductInput) async throws
        -> (product: CatalogProduct, created: Bool)
    {
        defer { changed() }
        guard !productId.isEmpty, productId.unicodeScalars.count <= 100 else {
            throw CatalogueRefusal(.invalidProductId, "a product id has 1 to 100 characters")
        }
        guard (input.entitlements ?? []).allSatisfy(CatalogueNames.isLabel) else {
            throw CatalogueRefusal(
                .invalidEntitlement,
                "each entitlement is named by 1 to 100 characters, with no control character and no space at either end"
            )
        }
        let type = ProductType(input._type)
        if type == .consumable, (input.credits?.additionalProperties ?? [:]).isEmpty,
            !(input.entitlements ?? []).isEmpty
        {
            throw CatalogueRefusal(
                .consumableEntitlements,
                "consumables credit balances; they grant no entitlements"
            )
        }
        if type == .nonRenewing, (input.durationSeconds ?? 0) <= 0, !(input.entitlements ?? []).isEmpty {
            throw CatalogueRefusal(
                .durationRequired,
                "a non-renewing subscription needs durationSeconds: the server sets its expiry"
            )
        }
        guard
            (input.credits?.additionalProperties ?? [:]).allSatisfy({
                CatalogueNames.isLabel($0.key) && (1...Ledger.largestCreditAmount).contains($0.value)
            })
        else {
            throw CatalogueRefusal(
                .invalidCredits,
                "each credit has a name of 1 to 100 characters, with no control character and no space at either end, "
                    + "and an amount from 1 to \(Ledger.largestCreditAmount)"
            )
        }
        if let price = input.price {
            guard (0...Self.largestPrice).contains(price) else {
                throw CatalogueRefusal(
                    .invalidPrice,
                    "price is in milliunits of its currency, from 0 to \(Self.largestPrice), not \(price)"
                )
            }
            guard input.currency != nil else {
                throw CatalogueRefusal(.invalidCurrency, "a price needs its currency (ISO 4217: USD, EUR, …)")
            }
        }
        if let currency = input.currency, !Self.isCurrencyCode(currency) {
            throw CatalogueRefusal(
                .invalidCurrency,
                "currency is an ISO 4217 code of three capital letters, not \(currency)"
            )
        }
        let now = clock.milliseconds
        return try await database.transaction { db in
            _ = try await self.requireApp(bundleId: bundleId, on: db)
            let existing = try await self.catalogueStore.product(bundleId: bundleId, productId: productId, on: db)
            // Apple's rule binds a new product only: one stored before it stays the operator's to replace.
            guard existing != nil || CatalogueNames.isProductId(productId) else {
                throw CatalogueRefusal(
                    .invalidProductId,
                    "a product id is 1 to 100 letters, digits, underscores and periods (Apple's rule)"
                )
            }
            let count = try await self.catalogueStore.products(bundleId: bundleId, on: db).count
            let product = CatalogProduct(
                bundleId: bundleId,
                productId: productId,
                type: type,
                title: input.title ?? existing?.title ?? productId,
                entitlements: input.entitlements ?? [],
                credits: input.credits?.additionalProperties ?? [:],
                content: existing?.content ?? [],
                subscriptionGroup: input.subscriptionGroup,
                durationSeconds: input.durationSeconds,
                price: input.price,
                currency: input.currency,
                position: input.position ?? existing?.position ?? count,
                createdAt: existing?.createdAt ?? now,
                updatedAt: now
            )
            try await self.catalogueStore.save(product, on: db)
            return (product, existing == nil)
        }
    }

    public func products(bundleId: String) async throws -> [CatalogProduct] {
        _ = try await requireApp(bundleId: bundleId, on: database.sql)
        return try await catalogueStore.products(bundleId: bundleId, on: database.sql)
    }

    /// The catalogue as apps see it, with an ETag for `If-None-Match`.
    package func masterList(bundleId: String) async throws -> MasterList {
        let products = try await catalogueStore.products(bundleId: bundleId, on: database.sql).map {
            MasterListProduct(
                productId: $0.productId,
                _type: Components.Schemas.ProductType($0.type),
                title: $0.title,
                entitlements: $0.entitlements,
                credits: Components.Schemas.Credits($0.credits),
                content: $0.content,
                subscriptionGroup: $0.subscriptionGroup
            )
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let digest = SHA256.hash(data: try encoder.encode(products))
        return MasterList(
            products: products,
            etag: "\"" + digest.prefix(16).map { String(format: "%02x", $0) }.joined() + "\""
        )
    }
}
