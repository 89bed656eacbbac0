import Foundation
import TillCore

extension TransactionReceipt {
    /// The receipt as a TillCore purchase.
    ///
    /// `transaction-id`, `product-id`, `bid` and `purchase-date-ms` are required; `quantity` defaults
    /// to 1, the original transaction to the transaction itself, the trial and intro flags to false.
    /// The product type is ``TillCore/ProductType/autoRenewable`` when `expires-date` and
    /// `web-order-line-item-id` are present, and unknown (nil) otherwise.
    ///
    /// - Throws: ``TransactionReceiptError/missingField`` or ``TransactionReceiptError/invalidField``
    ///   naming the key, so a malformed receipt is never mapped to made-up values.
    public func purchaseTransaction() throws(TransactionReceiptError) -> PurchaseTransaction {
        typealias Key = PurchaseInfo.Key
        let info = purchaseInfo

        func required(_ key: String) throws(TransactionReceiptError) -> String {
            guard let value = info[key] else { throw .missingField.with("the purchase-info has no \"\(key)\"") }
            return value
        }
        func checked<T>(_ key: String, _ value: T?) throws(TransactionReceiptError) -> T? {
            guard let raw = info[key] else { return nil }
            guard let value else {
                throw .invalidField.with("the purchase-info value \"\(raw)\" of \"\(key)\" is malformed")
            }
            return value
        }

        let transactionId = try required(Key.transactionId)
        let productId = try required(Key.productId)
        let bundleId = try required(Key.bundleId)
        guard let purchaseDate = try checked(Key.purchaseDateMs, info.purchaseDate) else {
            throw .missingField.with("the purchase-info has no \"\(Key.purchaseDateMs)\"")
        }
        let expiresDate = try checked(Key.expiresDate, info.expiresDate)
        let webOrderLineItemId = info.webOrderLineItemId
        return PurchaseTransaction(
            transactionId: transactionId,
            originalTransactionId: info.originalTransactionId,
            productId: productId,
            bundleId: bundleId,
            productType: expiresDate != nil && webOrderLineItemId != nil ? .autoRenewable : nil,
            quantity: try checked(Key.quantity, info.quantity) ?? 1,
            purchaseDate: purchaseDate,
            originalPurchaseDate: try checked(Key.originalPurchaseDateMs, info.originalPurchaseDate),
            expiresDate: expiresDate,
            webOrderLineItemId: webOrderLineItemId,
            isTrialPeriod: try checked(Key.isTrialPeriod, info.isTrialPeriod) ?? false,
            isInIntroOfferPeriod: try checked(Key.isInIntroOfferPeriod, info.isInIntroOfferPeriod) ?? false,
            environment: environment
        )
    }
}
