import Foundation
import StoreKit
import SwiftUI
import TillClient

// What the examples leave to the reader.
let accountId = "alice"
let server = TillServerClient(baseURL: "https://till.example.com", appKey: "tk_…")
let applicationSupport = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0]
let token = UUID()

struct ShopView: View {
    var body: some View { Text("Shop") }
}

struct Order { let id: String }

func unlock(_ snapshot: VerifiedSnapshot, files: [StoredFile]) {}
func showWaitingForApproval() {}
func show(_ error: StoreError) {}
func report(_ error: StoreVerificationError) {}
func showWillRetry(_ failure: DeliveryFailure) {}
func showRestoreFailed(_ failure: RestoreFailure) {}
func deliver(_ transaction: StoreKit.Transaction) async {}   // SwiftUI has a Transaction too: say whose

// docs/client.md, "StoreKit 1".
@MainActor
func storeKit1() throws -> TillObservableObject {
let purchases = try PurchaseCoordinator(
    storefront: StoreKit1Storefront(),               // make it at launch: it observes SKPaymentQueue from now on
    server: server, bundleId: "com.example.shop", customerId: accountId,
    directory: applicationSupport.appendingPathComponent("till"),
    evidence: .appReceipt)                           // StoreKit 1 signs nothing per transaction: send the receipt
let till = TillObservableObject(purchases)           // or drive `purchases` yourself, as below
return till
}

// docs/client.md, "Completed by the app".
@MainActor
func completedByTheApp(product: Product, folder: URL) async throws {
let purchases = try PurchaseCoordinator(storefront: StoreKit2Storefront(), server: server,
    bundleId: "com.example.shop", customerId: accountId, directory: folder, finishing: .byApp)

let result = try await product.purchase(options: [.appAccountToken(token)])   // the app's own code (main actor)
if case .success(let verification) = result {
    let outcome = await purchases.record(verification)   // VerificationResult<Transaction>
    if case .delivered = outcome, case .verified(let transaction) = verification { await transaction.finish() }
}
}

// docs/client.md, the store views.
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
struct StoreViewExample: View {
    @Environment(TillModel.self) private var till

    var body: some View {
SubscriptionStoreView(productIDs: ["premium.monthly", "premium.yearly"])
    .tillPurchaseCompletion(till)
    }
}

// docs/client.md, "Without SwiftUI".
func withoutSwiftUI<Store: TillStorefront>(purchases: PurchaseCoordinator<Store>, order: Order) async throws {
let launch = await purchases.start()                       // snapshot, outbox, unfinished transactions, AppTransaction
async let background: Void = purchases.run(every: 30)      // Transaction.updates and retries; outcomes on `events`
let offered = try await purchases.offeredProducts()        // the server's master list, the store's prices
switch try await purchases.purchase(Payment(productId: "pro", appAccountToken: token)) {
case .delivered(let delivery): unlock(delivery.snapshot, files: delivery.files)
case .userCancelled: break                                 // say nothing
case .pending: showWaitingForApproval()                    // Ask to Buy: delivered later, through `events`
case .failed(_, let error): show(error)                    // the store refused; nothing was charged
case .unverified(_, let error): report(error)              // StoreKit could not verify it: never delivered
case .notDelivered(let failure): showWillRetry(failure)    // charged; delivered later (below)
}
let pro = await purchases.isEntitled(to: "pro")            // from the verified snapshot, never a preference file
let after = try await purchases.spend(30, of: "gems", requestId: order.id)   // once per requestId
if case .failed(let failure) = await purchases.restore() {  // AppStore.sync() / restoreCompletedTransactions
    showRestoreFailed(failure)                             // what was delivered, what was not, and why
}
    _ = (launch, offered, pro, after)
    await background
}

// docs/client.md, "The AppTransaction".
func appTransaction<Store: TillStorefront>(purchases: PurchaseCoordinator<Store>) async {
switch await purchases.sendAppTransaction() {                // start() sent it: answers .alreadySent
case .sent(let kept): print(kept.originalApplicationVersion ?? "")   // what the server keeps for the customer
case .alreadySent, .unavailable: break                       // on record already; StoreKit 1 has none
case .unverified, .storeFailed, .willRetry: break            // sent again at the next launch and by run(every:)
case .refused(let error): print(error.code ?? "")            // e.g. storeKitTestingNotEnabled: fix, then force: true
}
}

// docs/client.md, "Offers".
func offers<Store: TillStorefront>(purchases: PurchaseCoordinator<Store>) async throws {
let signed = try await server.signPromotionalOffer(customerId: "alice", productId: "premium.yearly",
                                                   offerIdentifier: "loyal-yearly", jws: true)
let outcome = try await purchases.purchase(Payment(productId: "premium.yearly", promotionalOffer: signed.promotionalOffer))
let intro = try await purchases.signIntroductoryEligibility(productId: "premium.yearly")   // with the AppTransaction's id
_ = try await purchases.purchase(Payment(productId: "premium.yearly", introductoryOfferEligibility: intro.compactJWS))
try await server.setConsumptionConsent(customerId: "alice", consented: true)   // see notifications.md
    _ = outcome
}

// docs/offers.md, "Promotional offers": StoreKit by hand.
@MainActor
func promotionalOfferByHand(product: Product, skProduct: SKProduct) async throws {
// The answer above, through TillClient's TillServerClient (or your own call to the endpoint)
let offer = try await server.signPromotionalOffer(customerId: "alice", productId: "premium.yearly",
                                                  offerIdentifier: "loyal-yearly", appAccountToken: token.uuidString)
// StoreKit 2
let result = try await product.purchase(options: [
    .appAccountToken(token),
    .promotionalOffer(offerID: offer.offerIdentifier, keyID: offer.keyIdentifier, nonce: UUID(uuidString: offer.nonce!)!,
                      signature: Data(base64Encoded: offer.signature!)!, timestamp: Int(offer.timestamp!)),
])
// StoreKit 1
let payment = SKMutablePayment(product: skProduct)
payment.applicationUsername = offer.appAccountToken
payment.paymentDiscount = SKPaymentDiscount(identifier: offer.offerIdentifier, keyIdentifier: offer.keyIdentifier,
    nonce: UUID(uuidString: offer.nonce!)!, signature: offer.signature!, timestamp: NSNumber(value: offer.timestamp!))
SKPaymentQueue.default().add(payment)
    _ = result
}

// docs/offers.md, "Promotional offers": the JWS.
@MainActor
func promotionalOfferJWSByHand(product: Product) async throws {
    let offer = try await server.signPromotionalOffer(customerId: "alice", productId: "premium.yearly",
                                                      offerIdentifier: "loyal-yearly", jws: true)
// StoreKit 2, built with Xcode 26 (back-deployed to iOS 15): the call gives an array of options
#if compiler(>=6.2)
let result = try await product.purchase(
    options: Set(Product.PurchaseOption.promotionalOffer(offer.offerIdentifier, compactJWS: offer.compactJWS!)))
if case .success(.verified(let transaction)) = result { await deliver(transaction) }   // then finish it
#endif
}

// docs/offers.md, "Introductory-offer eligibility".
@MainActor
func introductoryEligibilityByHand(product: Product) async throws {
    let answer = try await server.signIntroductoryEligibility(customerId: "alice", productId: "premium.monthly")
#if compiler(>=6.1)   // Xcode 16.3 or later (back-deployed to iOS 15)
let result = try await product.purchase(options: [.introductoryOfferEligibility(compactJWS: answer.compactJWS)])
if case .success(.verified(let transaction)) = result { await deliver(transaction) }   // then finish it
#endif
}

// The docs' snippets in code spans (tables and sentences), each as it is written there.
// docs/offers.md, the table: StoreKit 2's three purchase options.
@MainActor
func offerTable(product: Product, id: String, key: String, nonce: UUID, signature: Data, time: Int, offerID: String,
                jws: String) async throws {
    _ = try await product.purchase(options: [.promotionalOffer(offerID: id, keyID: key, nonce: nonce, signature: signature, timestamp: time), .appAccountToken(token)])
    #if compiler(>=6.2)
        _ = try await product.purchase(options: Set(Product.PurchaseOption.promotionalOffer(offerID, compactJWS: jws)))
    #endif
    #if compiler(>=6.1)
        _ = try await product.purchase(options: [.introductoryOfferEligibility(compactJWS: jws)])
    #endif
}

// docs/offers.md, "Promotional offers": the payment TillClient makes of the server's answer.
func offerPayment(offer: SignedPromotionalOffer) -> Payment {
    Payment(productId: "premium.yearly", appAccountToken: token, promotionalOffer: offer.promotionalOffer)
}

// docs/client.md, "The AppTransaction": once the cause of a refusal is fixed.
func appTransactionAgain<Store: TillStorefront>(purchases: PurchaseCoordinator<Store>) async {
    _ = await purchases.sendAppTransaction(force: true)
}
