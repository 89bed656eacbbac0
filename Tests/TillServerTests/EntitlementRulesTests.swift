import Testing
import TillContract
import TillCore
import TillLedger

/// The entitlement rules on rows made by hand: what a customer's ledger grants, whatever told the server of it.
struct EntitlementRulesTests {
    static let catalogue = [
        "pro": CatalogProduct(
            bundleId: "com.example.till",
            productId: "pro",
            type: .nonConsumable,
            title: "Pro",
            entitlements: ["pro"],
            credits: [:],
            content: [],
            position: 0,
            createdAt: 0,
            updatedAt: 0
        )
    ]

    static func row(_ id: String, original: String, refunded: Bool = false) -> LedgerRecord {
        LedgerRecord(
            environment: .production,
            transactionId: id,
            bundleId: "com.example.till",
            customerId: "alice",
            originalTransactionId: original,
            productId: "pro",
            productType: .nonConsumable,
            quantity: 1,
            purchaseDate: 1_000,
            revocationDate: refunded ? 2_000 : nil,
            revocationReason: refunded ? .refund : nil,
            isUpgraded: false,
            ownership: .purchased,
            submissionId: "s",
            confirmed: true,
            createdAt: 1_000,
            updatedAt: 1_000
        )
    }

    static func granted(_ rows: [LedgerRecord]) -> [String] {
        EntitlementRules.entitlements(rows, catalogue: catalogue, now: 3_000).map(\.id)
    }

    /// A non-consumable handed out again (a restore, another device) is the same purchase under a transaction id of
    /// its own: refunding either transaction ends it, and the other granted `pro` on its own before.
    @Test func aRefundOfANonConsumableEndsEveryTransactionThatHandsItOut() {
        #expect(Self.granted([Self.row("1", original: "1"), Self.row("2", original: "1")]) == ["pro"])
        #expect(Self.granted([Self.row("1", original: "1", refunded: true), Self.row("2", original: "1")]).isEmpty)
        #expect(Self.granted([Self.row("1", original: "1"), Self.row("2", original: "1", refunded: true)]).isEmpty)
        // Bought again after the refund: a purchase of its own.
        #expect(Self.granted([Self.row("1", original: "1", refunded: true), Self.row("3", original: "3")]) == ["pro"])
    }
}
