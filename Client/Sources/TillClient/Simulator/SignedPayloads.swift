import Foundation
import TillCore

/// The payloads of the JWS the simulator's device API hands out (signed transactions, renewal info, the app
/// transaction), read as StoreKit 2 reads them on a device. Reading is not believing: the server verifies every
/// signature before it grants anything.
enum SignedPayload {
    /// The payload of a compact JWS, decoded; nil when it is not one.
    static func decode<Payload: Decodable>(_ type: Payload.Type, from jws: String) -> Payload? {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64) else { return nil }
        return try? JSONDecoder().decode(Payload.self, from: data)
    }

    /// Apple's JWSTransactionDecodedPayload, the fields a device reads.
    struct Transaction: Decodable {
        var transactionId: String
        var originalTransactionId: String?
        var productId: String
        var type: String?
        var purchaseDate: Int64?
        var quantity: Int?
        var appAccountToken: String?
        var inAppOwnershipType: String?
        var expiresDate: Int64?
        var revocationDate: Int64?
        var revocationReason: Int?
        var isUpgraded: Bool?
        var signedDate: Int64?
        var subscriptionGroupIdentifier: String?

        /// StoreKit 2's product type names (`Auto-Renewable Subscription`, …) as TillCore's.
        var productType: ProductType? {
            switch type {
            case "Consumable": .consumable
            case "Non-Consumable": .nonConsumable
            case "Auto-Renewable Subscription": .autoRenewable
            case "Non-Renewing Subscription": .nonRenewing
            default: nil
            }
        }

        /// The transaction as TillClient's value, handed out under `id`.
        func storeTransaction(id: String, jws: String, requiresFinish: Bool) -> StoreTransaction {
            StoreTransaction(
                id: id,
                transactionId: transactionId,
                originalTransactionId: originalTransactionId,
                productId: productId,
                productType: productType,
                purchaseDate: Date(milliseconds: purchaseDate ?? 0),
                quantity: quantity ?? 1,
                appAccountToken: appAccountToken.flatMap(UUID.init(uuidString:)),
                ownership: inAppOwnershipType == "FAMILY_SHARED" ? .familyShared : .purchased,
                expirationDate: expiresDate.map(Date.init(milliseconds:)),
                revocationDate: revocationDate.map(Date.init(milliseconds:)),
                revocationReason: revocationDate == nil
                    ? nil : (isUpgraded == true ? .upgraded : (revocationReason == 1 ? .developerIssue : .other)),
                isUpgraded: isUpgraded ?? false,
                requiresFinish: requiresFinish,
                signedTransaction: jws
            )
        }
    }

    /// Apple's JWSRenewalInfoDecodedPayload, the fields a device reads.
    struct RenewalInfo: Decodable {
        var originalTransactionId: String
        var autoRenewProductId: String?
        var productId: String?
        var autoRenewStatus: Int?
        var isInBillingRetryPeriod: Bool?
        var gracePeriodExpiresDate: Int64?
    }

    /// Apple's AppTransaction, the fields a device reads.
    struct AppTransaction: Decodable {
        var bundleId: String
        var appTransactionId: String?
        var originalApplicationVersion: String?
        var originalPurchaseDate: Int64?
        var receiptType: String?
        var environment: String?
    }
}

extension Date {
    /// A date from UNIX milliseconds.
    init(milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
