import Foundation
import TillCore
import TillLedger
import TillServer
import TillStorage

/// Customers with a long history, for `till bench submissions --history N`: each already bought a consumable `N`
/// times (a game's customer), so that the run measures what a purchase costs them against a new customer.
///
/// A bulk load through the ledger's bulk path (`LedgerBulkLoad`), like `LedgerGenerator`'s: the rows a purchase
/// leaves (the ledger's row, the credits' entry) written in multi-row INSERTs, then each credit's total made from its
/// entries by the ledger (`Ledger.rebuildBalances`).
enum HistoryLoader {
    static func customerId(_ index: Int) -> String { "history-\(index)" }

    /// Writes `purchases` consumable purchases for each of `customers` customers of `bundleId`.
    static func write(purchases: Int, customers: Int, bundleId: String, into server: PurchaseServer) async throws {
        let start = Int64(Date().timeIntervalSince1970 * 1000) - Int64(purchases) * 60_000
        var transaction: Int64 = 7_000_000_000_000_000
        for customer in 0..<customers {
            let customerId = Self.customerId(customer)
            var load = LedgerBulkLoad()
            load.customer(bundleId: bundleId, customerId: customerId, at: start)
            load.consumables(
                purchases,
                of: "gems.100",
                crediting: 100,
                of: "gems",
                bundleId: bundleId,
                customerId: customerId,
                from: start,
                nextId: &transaction
            )
            let rows = load
            try await server.database.transaction { db in try await rows.write(on: db) }
        }
        try await server.ledger.rebuildBalances()
    }
}
