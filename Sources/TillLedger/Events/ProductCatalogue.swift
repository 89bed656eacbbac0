import SQLKit

/// Where the event log reads an app's products, to give an event's customer its entitlements: the catalogue room
/// (`Catalogue`, which caches them), or a test's fixed list. A seam because the catalogue is a room above the ledger.
package protocol ProductCatalogue: Sendable {
    /// The app's products by product id, read on `db` (the change's own connection) when they are not cached.
    func products(of bundleId: String, on db: any SQLDatabase) async throws -> [String: CatalogProduct]
}
