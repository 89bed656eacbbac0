import Foundation
import SQLKit
import TillCore
import TillFormats
import TillStorage

/// What refunds, reversals and upgrades reported by notifications do to the money, credits and periods.
extension PurchaseServer {
    /// A refund: the money booked for the purchase (or its price) counts negative, prorated when Apple refunded
    /// part of it; a consumable's credits are taken back.
    func bookRefund(
        of row: LedgerRecord,
        signed: JWSTransactionDecodedPayload,
        catalogue: [String: CatalogProduct],
        on db: any SQLDatabase
    ) async throws {
        let booked = try await store.financeEntry(
            environment: row.environment,
            transactionId: row.transactionId,
            kind: "purchase",
            on: db
        )
        let amount = booked?.amount ?? row.price ?? 0
        let currency = booked?.currency ?? row.currency
        let share = Int64(signed.revocationPercentage ?? 100_000)
        if amount > 0, let currency, row.ownership == Ownership.purchased.rawValue {
            try await store.recordFinance(
                environment: row.environment,
                transactionId: row.transactionId,
                bundleId: row.bundleId,
                productId: row.productId,
                amount: -(amount * share / 100_000),
                currency: currency,
                at: row.revocationDate ?? nowMilliseconds,
                kind: "refund",
                on: db
            )
        }
        if let product = catalogue[row.productId], product.type == .consumable {
            for (credit, units) in product.credits {
                try await store.addBalanceEntry(
                    bundleId: row.bundleId,
                    customerId: row.customerId,
                    credit: credit,
                    delta: -units * Int64(row.quantity),
                    reference: "refund:\(row.environment):\(row.transactionId)",
                    at: nowMilliseconds,
                    on: db
                )
            }
        }
    }

    /// REFUND_REVERSED: the refund's money and credits come back.
    func reverseRefund(
        of row: LedgerRecord,
        catalogue: [String: CatalogProduct],
        now: Int64,
        on db: any SQLDatabase
    ) async throws {
        try await store.reverseFinance(of: row, kind: "refund", as: "refundReversed", at: now, on: db)
        if let product = catalogue[row.productId], product.type == .consumable {
            for (credit, units) in product.credits {
                try await store.addBalanceEntry(
                    bundleId: row.bundleId,
                    customerId: row.customerId,
                    credit: credit,
                    delta: units * Int64(row.quantity),
                    reference: "refundReversed:\(row.environment):\(row.transactionId)",
                    at: now,
                    on: db
                )
            }
        }
    }

    /// An upgrade starts at once: the periods of the subscription still running when it began are upgraded away.
    func markUpgraded(before upgrade: LedgerRecord, now: Int64, on db: any SQLDatabase) async throws {
        for var row in try await store.transactions(
            environment: upgrade.environment,
            originalTransactionId: upgrade.originalTransactionId,
            on: db
        )
        where row.transactionId != upgrade.transactionId && row.purchaseDate <= upgrade.purchaseDate
            && (row.expiresDate ?? 0) > upgrade.purchaseDate && !row.isUpgraded
        {
            row.isUpgraded = true
            if row.revocationDate == nil {
                row.revocationDate = upgrade.purchaseDate
                row.revocationReason = "upgraded"
            }
            row.updatedAt = now
            try await store.update(row, on: db)
        }
    }
}
