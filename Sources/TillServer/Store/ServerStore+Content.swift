import Foundation
import SQLKit
import TillContract

extension ServerStore {
    /// The secret every process of a deployment signs download URLs with when none is configured: the first
    /// process to start stores 32 random bytes (as hex), later ones and other processes read the same value.
    func sharedServerSecret() async throws -> [UInt8] {
        let hex = try await setting("server.secret") {
            (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        }
        return Array(hex.utf8)
    }

    /// Products of every app whose content lists the file `sha256`, to tell whether its blob is still needed.
    ///
    /// - Parameter sha256: 64 lowercase hex digits (nothing `LIKE` would read as a wildcard).
    func products(referencingContent sha256: String, on db: any SQLDatabase) async throws -> [CatalogProduct] {
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
}
