import Crypto
import Foundation
import TillCore

/// Sample data made with the test PKI: a signed transaction's payload and an app receipt. The benchmarks verify
/// them, and the inspector's tests read them.
public enum Samples {
    /// A signed transaction with the fields the App Store fills for an auto-renewable subscription.
    public static func transaction() -> JWSTransactionDecodedPayload {
        let purchase = Date(millisecondsSince1970: 1_738_645_560_000)
        return JWSTransactionDecodedPayload(
            transactionId: "2000000847061981",
            originalTransactionId: "2000000847061981",
            webOrderLineItemId: "2000000091314729",
            bundleId: "com.example.till",
            productId: "com.example.till.monthly",
            subscriptionGroupIdentifier: "21440412",
            purchaseDate: purchase,
            originalPurchaseDate: purchase,
            expiresDate: purchase + 30 * 86_400,
            quantity: 1,
            type: .autoRenewableSubscription,
            appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138",
            inAppOwnershipType: .purchased,
            signedDate: purchase + 1,
            environment: .sandbox,
            storefront: "USA",
            storefrontId: "143441",
            transactionReason: .purchase,
            currency: "USD",
            price: 9990,
            appTransactionId: "704289572407232543"
        )
    }

    /// A sandbox receipt shaped like the App Store's, including the attributes Apple writes but does not document.
    public static func receipt(purchases: Int, bundleId: String = "com.example.till") -> AppReceipt {
        let created = Date(timeIntervalSince1970: 1_700_000_000)
        let undocumented: [ReceiptAttribute] = [
            ReceiptAttribute(type: 1709, value: ReceiptValue.utf8String("")),
            ReceiptAttribute(type: 1710, value: ReceiptValue.integer(0)),
            ReceiptAttribute(type: 1714, value: ReceiptValue.utf8String("")),
            ReceiptAttribute(type: 1715, value: ReceiptValue.utf8String("")),
            ReceiptAttribute(type: 1716, value: ReceiptValue.utf8String("")),
            ReceiptAttribute(type: 1717, value: ReceiptValue.utf8String("")),
            ReceiptAttribute(type: 1718, value: ReceiptValue.utf8String("")),
            ReceiptAttribute(type: 1722, value: ReceiptValue.integer(0)),
        ]
        let inApps = (0..<purchases).map { i -> InAppPurchase in
            let start = created - Double(purchases - i) * 30 * 86_400
            let subscription = i % 2 == 0
            return InAppPurchase(
                quantity: 1,
                productId: subscription ? "\(bundleId).monthly" : "\(bundleId).gems.\(i)",
                transactionId: String(2_000_000_847_061_981 + i),
                purchaseDate: start,
                originalTransactionId: String(2_000_000_847_061_981 + (subscription ? 0 : i)),
                originalPurchaseDate: start,
                productTypeCode: subscription ? 3 : 1,
                expiresDate: subscription ? start + 30 * 86_400 : nil,
                webOrderLineItemId: subscription ? 2_000_000_021_470_597 + Int64(i) : nil,
                isTrialPeriod: subscription ? false : nil,
                isInIntroOfferPeriod: subscription ? false : nil,
                otherAttributes: undocumented
            )
        }
        let opaque: [UInt8] = Array(0..<16)
        return AppReceipt(
            receiptType: "ProductionSandbox",
            appItemId: 0,
            bundleId: bundleId,
            applicationVersion: "1",
            opaqueValue: opaque,
            sha1Hash: AppReceipt.deviceHash(
                identifier: Array(repeating: 7, count: 16),
                opaqueValue: opaque,
                bundleIdAttributeValue: ReceiptValue.utf8String(bundleId)
            ),
            receiptCreationDate: created,
            downloadId: 0,
            versionExternalIdentifier: 0,
            inAppPurchases: inApps,
            originalPurchaseDate: Date(timeIntervalSince1970: 1_375_340_400),
            originalApplicationVersion: "1.0",
            otherAttributes: [
                ReceiptAttribute(type: 8, value: ReceiptValue.date(nil)),
                ReceiptAttribute(type: 10, value: [ASN1Tag.ia5String, 2, 0x34, 0x2B]),
                ReceiptAttribute(type: 20, value: ReceiptValue.utf8String("")),
            ]
        )
    }
}
