import Foundation
import Testing
import TillContract
import TillCore
import TillSnapshot

/// The snapshot's bytes (what is signed) are written by hand for speed; they must be what `JSONEncoder` writes
/// with the contract's generated `EntitlementSnapshot`.
@Suite struct SnapshotJSONTests {
    static func encoded<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }

    static let awkward = "quote \" backslash \\ slash / newline \n tab \t bell \u{07} unit \u{1F} é 🛒"

    @Test func aSnapshotIsWrittenAsJSONEncoderWritesIt() throws {
        let full = EntitlementSnapshot(
            bundleId: "com.example.app",
            customerId: Self.awkward,
            owner: "owner-1",
            issuedAt: 1_700_000_000_123,
            entitlements: [
                .init(id: "pro", productId: "pro.monthly", expiresDate: 1_800_000_000_000, provisional: true),
                .init(id: "maps", productId: "maps", expiresDate: nil, provisional: false),
            ],
            balances: ["gems": 100, "coins": -5, "Zeta": 0],
            purchases: [
                .init(
                    transactionId: "1000000001",
                    originalTransactionId: "1000000000",
                    productId: "pro.monthly",
                    productType: .autoRenewable,
                    quantity: 2,
                    purchaseDate: 1_700_000_000_000,
                    expiresDate: 1_800_000_000_000,
                    revoked: true,
                    confirmed: false
                ),
                .init(
                    transactionId: "1000000002",
                    originalTransactionId: "1000000002",
                    productId: "gems.100",
                    productType: nil,
                    quantity: 1,
                    purchaseDate: 1_700_000_000_001,
                    expiresDate: nil,
                    revoked: false,
                    confirmed: true
                ),
            ]
        )
        let empty = EntitlementSnapshot(
            bundleId: "b",
            customerId: "c",
            owner: "c",
            issuedAt: 0,
            entitlements: [],
            balances: [:],
            purchases: []
        )
        for snapshot in [full, empty] {
            var writer = JSONWriter()
            snapshot.writeJSON(to: &writer)
            #expect(
                String(decoding: writer.bytes, as: UTF8.self)
                    == String(decoding: try Self.encoded(snapshot), as: UTF8.self)
            )
        }
    }
}
