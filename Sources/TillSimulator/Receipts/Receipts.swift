import Foundation
import Logging
import TillFormats
import TillHTTPKit
import TillStorage

/// Receipts and signing: the signed transactions, renewal info and app transactions of StoreKit 2, app receipts
/// and iOS 6 transaction receipts, and verifyReceipt, which checks a receipt and answers as Apple does.
public struct Receipts: Sendable {
    let store: SimulatorStore
    /// Renewal info names the win-back offers a lapsed subscriber may redeem.
    let offers: Offers
    let signer: SimulatorSigner
    let clock: SimulatorClock
    let logger: Logger
    let receiptVerifier: ReceiptVerifier
    let transactionReceiptVerifier: TransactionReceiptVerifier
}
