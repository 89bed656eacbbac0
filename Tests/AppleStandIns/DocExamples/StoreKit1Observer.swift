// docs/client.md, "Completed by the app", StoreKit 1: the app's own observer hands each transaction to Till, then
// finishes it.
import Foundation
import StoreKit
import TillClient

final class AppObserver: NSObject, SKPaymentTransactionObserver {
    let purchases: PurchaseCoordinator<StoreKit1Storefront<SystemStoreKit1>>

    init(purchases: PurchaseCoordinator<StoreKit1Storefront<SystemStoreKit1>>) {
        self.purchases = purchases
    }

func paymentQueue(_ queue: SKPaymentQueue, updatedTransactions transactions: [SKPaymentTransaction]) {
    let purchases = self.purchases     // PurchaseCoordinator(storefront: StoreKit1Storefront(), …, finishing: .byApp)
    for transaction in transactions where transaction.transactionState == .purchased {
        Task {
            if case .delivered = await purchases.record(transaction) {
                SKPaymentQueue.default().finishTransaction(transaction)
            }
        }
    }
}

    // Optional in Apple's protocol, required by the stand-in's (a Swift protocol has no optional requirements).
    func paymentQueue(_ queue: SKPaymentQueue, restoreCompletedTransactionsFailedWithError error: any Error) {}
    func paymentQueueRestoreCompletedTransactionsFinished(_ queue: SKPaymentQueue) {}
}
