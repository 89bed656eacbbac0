import Foundation
import SQLKit
import TillContract
import TillCore
import TillLedger
import TillStorage

/// The apps' product catalogues (`srv_products`) and what content each product delivers.
package struct CatalogueStore: ServerSQLStore {
    package let database: TillDatabase

    // MARK: Catalogue

    private struct ProductRow: Codable {
        var bundleId: String
        var productId: String
        var type: String
        var title: String
        var entitlements: String
        var credits: String
        var content: String
        var subscriptionGroup: String?
        var durationSeconds: Int64?
        var price: Int64?
        var currency: String?
        var position: Int
        var createdAt: Int64
        var updatedAt: Int64
    }

    package func save(_ product: CatalogProduct, on db: any SQLDatabase) async throws {
        let row = ProductRow(
            bundleId: product.bundleId,
            productId: product.productId,
            type: product.type.rawValue,
            title: product.title,
            entitlements: Self.json(product.entitlements),
            credits: Self.json(product.credits),
            content: Self.json(product.content),
            subscriptionGroup: product.subscriptionGroup,
            durationSeconds: product.durationSeconds,
            price: product.price,
            currency: product.currency,
            position: product.position,
            createdAt: product.createdAt,
            updatedAt: product.updatedAt
        )
        try await db.insert(into: "srv_products").model(row, with: Self.encoding)
            .onConflict(with: ["bundle_id", "product_id"]) { try $0.set(excludedContentOf: row, with: Self.encoding) }
            .run()
    }

    package func products(bundleId: String, on db: any SQLDatabase) async throws -> [CatalogProduct] {
        try await db.select().column("*").from("srv_products").where("bundle_id", .equal, bundleId).orderBy("position")
            .orderBy("product_id").all(decoding: ProductRow.self, with: Self.decoding).map(Self.product)
    }

    package func product(bundleId: String, productId: String, on db: any SQLDatabase) async throws -> CatalogProduct? {
        try await db.select().column("*").from("srv_products").where("bundle_id", .equal, bundleId)
            .where("product_id", .equal, productId).first(decoding: ProductRow.self, with: Self.decoding).map(
                Self.product
            )
    }

    private static func product(_ row: ProductRow) throws -> CatalogProduct {
        CatalogProduct(
            bundleId: row.bundleId,
            productId: row.productId,
            type: ProductType(rawValue: row.type) ?? .consumable,
            title: row.title,
            entitlements: try decodeJSON([String].self, row.entitlements),
            credits: try decodeJSON([String: Int64].self, row.credits),
            content: try decodeJSON([ContentFile].self, row.content),
            subscriptionGroup: row.subscriptionGroup,
            durationSeconds: row.durationSeconds,
            price: row.price,
            currency: row.currency,
            position: row.position,
            createdAt: row.createdAt,
            updatedAt: row.updatedAt
        )
    }

    /// Products of every app whose content lists the file `sha256`, to tell whether its blob is still needed.
    ///
    /// - Parameter sha256: 64 lowercase hex digits (nothing `LIKE` would read as a wildcard).
    package func products(referencingContent sha256: String, on db: any SQLDatabase) async throws -> [CatalogProduct] {
        let rows = try await db.raw(
            "SELECT bundle_id, product_id FROM srv_products WHERE content LIKE \(bind: "%\(sha256)%")"
        ).all()
        var products: [CatalogProduct] = []
        for row in rows {
            let bundleId = try row.decode(column: "bundle_id", as: String.self)
            let productId = try row.decode(column: "product_id", as: String.self)
            if let product = try await product(bundleId: bundleId, productId: productId, on: db),
                product.content.contains(where: { $0.sha256 == sha256 })
            {
                products.append(product)
            }
        }
        return products
    }

    package init(
        database: TillDatabase
    ) {
        self.database = database
    }
}
