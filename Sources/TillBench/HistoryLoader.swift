import Foundation
import TillServer
import TillStorage

/// Customers with a long history, for `till bench submissions --history N`: each already bought a consumable `N`
/// times (a game's customer), so that the run measures what a purchase costs them against a new customer.
///
/// A bulk load, like `LedgerGenerator`'s: the rows a purchase leaves (the ledger's row, the credits' entry) written in
/// multi-row INSERTs, then each credit's total made from its entries by the ledger (`Ledger.rebuildBalances`).
enum HistoryLoader {
    static func customerId(_ index: Int) -> String { "history-\(index)" }

    /// Writes `purchases` consumable purchases for each of `customers` customers of `bundleId`.
    static func write(purchases: Int, customers: Int, bundleId: String, into server: PurchaseServer) async throws {
        let start = Int64(Date().timeIntervalSince1970 * 1000) - Int64(purchases) * 60_000
        var transaction: Int64 = 7_000_000_000_000_000
        for customer in 0..<customers {
            let customerId = Self.customerId(customer)
            var batch = Batch()
            batch.customer(bundleId: bundleId, customerId: customerId, at: start)
            for purchase in 0..<purchases {
                let id = String(transaction)
                let date = start + Int64(purchase) * 60_000
                transaction += 1
                batch.add(
                    "srv_transactions",
                    [
                        "environment", "transaction_id", "bundle_id", "customer_id", "original_transaction_id",
                        "product_id", "product_type", "quantity", "purchase_date", "is_upgraded", "ownership",
                        "submission_id", "source", "confirmed", "created_at", "updated_at", "introductory_offer",
                    ],
                    [
                        "Sandbox", id, bundleId, customerId, id, "gems.100", "consumable", 1, date, false, "PURCHASED",
                        "history-\(id)", "submission", true, date, date, false,
                    ]
                )
                batch.add(
                    "srv_balance_entries",
                    ["bundle_id", "customer_id", "credit", "delta", "reference", "created_at"],
                    [bundleId, customerId, "gems", Int64(100), "purchase:Sandbox:\(id)", date]
                )
            }
            let rows = batch
            try await server.database.transaction { db in try await rows.write(on: db) }
        }
        try await server.ledger.rebuildBalances()
    }
}
