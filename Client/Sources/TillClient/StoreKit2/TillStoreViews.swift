#if canImport(StoreKit) && canImport(SwiftUI)
    import StoreKit
    import SwiftUI

    // Compiled for real only on Apple platforms. On Linux, CI type-checks this file against a declaration-only
    // stand-in of exactly the StoreKit and SwiftUI API it uses (Tests/AppleStandIns, docs/client.md).
    //
    // SwiftUI declares a `Transaction` of its own (an animation's), so StoreKit's is always written
    // `StoreKit.Transaction` here: a bare `Transaction` in a file that imports both is ambiguous.

    extension View {
        /// Hands each purchase a StoreKit store view makes (`StoreView`, `ProductView`, `SubscriptionStoreView`) to
        /// Till (`onInAppPurchaseCompletion`): recorded with the server, delivered, and finished if Till finishes
        /// transactions.
        @available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
        public func tillPurchaseCompletion(_ till: some TillCustomerModel) -> some View {
            onInAppPurchaseCompletion { product, result in
                _ = await till.record(result, product: product)
            }
        }

        /// Apple's refund request sheet for a transaction (`refundRequestSheet`); once it closes, Till refreshes the
        /// customer (a granted refund reaches the server from Apple and takes the purchase back).
        @available(iOS 15.0, macOS 14.0, visionOS 1.0, *)
        @available(tvOS, unavailable)
        @available(watchOS, unavailable)
        public func tillRefundRequestSheet(
            for transaction: StoreTransaction,
            isPresented: Binding<Bool>,
            till: some TillCustomerModel
        ) -> some View {
            refundRequestSheet(for: UInt64(transaction.transactionId) ?? 0, isPresented: isPresented) { _ in
                Task { await till.sceneBecameActive() }
            }
        }

        /// Apple's subscription management sheet (`manageSubscriptionsSheet`); once it closes, Till refreshes the
        /// customer (a cancellation or plan change reaches the server from Apple).
        @available(iOS 15.0, visionOS 1.0, *)
        @available(macOS, unavailable)
        @available(tvOS, unavailable)
        @available(watchOS, unavailable)
        public func tillManageSubscriptionsSheet(isPresented: Binding<Bool>, till: some TillCustomerModel) -> some View
        {
            let presented = isPresented.wrappedValue
            return manageSubscriptionsSheet(isPresented: isPresented)
                .task(id: presented) {
                    if !presented { await till.sceneBecameActive() }
                }
        }

        /// Apple's offer code redemption sheet (`offerCodeRedemption`); the purchase it makes arrives through the
        /// transaction updates, and Till delivers it.
        @available(iOS 16.0, macOS 15.0, visionOS 1.0, *)
        @available(tvOS, unavailable)
        @available(watchOS, unavailable)
        public func tillOfferCodeRedemption(isPresented: Binding<Bool>, till: some TillCustomerModel) -> some View {
            offerCodeRedemption(isPresented: isPresented) { _ in
                Task { await till.sceneBecameActive() }
            }
        }
    }

    extension TillCustomerModel {
        /// Records a StoreKit 2 transaction the app's own code has (`VerificationResult<StoreKit.Transaction>`).
        @discardableResult
        public func record(_ verification: VerificationResult<StoreKit.Transaction>) async -> PurchaseOutcome {
            await record(SystemStoreKit2.signed(verification).value)
        }

        /// Records what a store view or the app's own `product.purchase(options:)` answered.
        @discardableResult
        public func record(_ result: Result<Product.PurchaseResult, any Error>, product: Product) async
            -> PurchaseOutcome
        {
            switch result {
            case .success(.success(let verification)):
                return await record(verification)
            case .success(.userCancelled):
                return await record(.success(.userCancelled), productId: product.id)
            case .success(.pending):
                return await record(.success(.pending(PendingPurchase(productId: product.id))), productId: product.id)
            case .success:
                return await record(
                    .failure(
                        StoreError(.unknown, message: "a purchase result this version of TillClient does not know")
                    ),
                    productId: product.id
                )
            case .failure(let error):
                return await record(.failure(SystemStoreKit2.storeError(error)), productId: product.id)
            }
        }
    }
#endif
