import Foundation

extension ReceiptInfoJSON {
    /// The `receipt` object verifyReceipt answers for a decoded app receipt.
    public init(_ receipt: AppReceipt, requestDate: Date? = nil) {
        self.init(
            receiptType: receipt.receiptType.map(LegacyReceiptType.init(rawValue:)),
            adamId: receipt.appItemId,
            appItemId: receipt.appItemId,
            bundleId: receipt.bundleId,
            applicationVersion: receipt.applicationVersion,
            downloadId: receipt.downloadId,
            versionExternalIdentifier: receipt.versionExternalIdentifier,
            receiptCreationDate: receipt.receiptCreationDate,
            requestDate: requestDate,
            originalPurchaseDate: receipt.originalPurchaseDate,
            originalApplicationVersion: receipt.originalApplicationVersion,
            expirationDate: receipt.expirationDate,
            inApp: receipt.inAppPurchases.map(InAppReceiptInfoJSON.init)
        )
    }
}

extension InAppReceiptInfoJSON {
    /// An `in_app` element for a decoded in-app purchase entry.
    public init(_ purchase: InAppPurchase) {
        self.init(
            quantity: purchase.quantity,
            productId: purchase.productId,
            transactionId: purchase.transactionId,
            originalTransactionId: purchase.originalTransactionId ?? purchase.transactionId,
            purchaseDate: purchase.purchaseDate,
            originalPurchaseDate: purchase.originalPurchaseDate ?? purchase.purchaseDate,
            expiresDate: purchase.expiresDate,
            cancellationDate: purchase.cancellationDate,
            isTrialPeriod: purchase.isTrialPeriod ?? false,
            isInIntroOfferPeriod: purchase.isInIntroOfferPeriod ?? (purchase.expiresDate == nil ? nil : false),
            webOrderLineItemId: purchase.webOrderLineItemId.map(String.init),
            promotionalOfferId: purchase.promotionalOfferId
        )
    }
}
