#if canImport(StoreKit)
    import Foundation
    import StoreKit
    import TillCore

    // Compiled for real only on Apple platforms. On Linux, CI type-checks this file against a declaration-only
    // stand-in of exactly the StoreKit API it uses (Tests/AppleStandIns, docs/client.md).

    /// Apple's StoreKit 1 behind ``StoreKit1Storefront``: the default payment queue and its observer,
    /// `SKProductsRequest`, `SKReceiptRefreshRequest` and the receipt file.
    public final class SystemStoreKit1: NSObject, StoreKit1Interface, SKPaymentTransactionObserver,
        SKProductsRequestDelegate, @unchecked Sendable
    {
        private struct State {
            var handler: (@Sendable (StoreKit1Event) -> Void)?
            /// StoreKit's transactions handed out, by handle, until finished.
            var transactions: [String: SKPaymentTransaction] = [:]
            /// The products looked up, for payments.
            var products: [String: SKProduct] = [:]
            /// Requests running, with who waits for them.
            var productRequests:
                [ObjectIdentifier: (SKProductsRequest, CheckedContinuation<ProductLookup, any Error>)] = [:]
            var refreshRequests: [ObjectIdentifier: (SKRequest, CheckedContinuation<Void, any Error>)] = [:]
        }

        private let state = Locked(State())
        private let queue: SKPaymentQueue

        public init(queue: SKPaymentQueue = .default()) {
            self.queue = queue
            super.init()
        }

        public func canMakePayments() -> Bool { SKPaymentQueue.canMakePayments() }

        public func observe(_ handler: @escaping @Sendable (StoreKit1Event) -> Void) {
            state.withLock { $0.handler = handler }
            queue.add(self)
        }

        public func products(for identifiers: Set<String>) async throws -> ProductLookup {
            let request = SKProductsRequest(productIdentifiers: identifiers)
            request.delegate = self
            return try await withCheckedThrowingContinuation { continuation in
                state.withLock { $0.productRequests[ObjectIdentifier(request)] = (request, continuation) }
                request.start()
            }
        }

        public func add(_ payment: StoreKit1Payment) async throws {
            var product = state.withLock { $0.products[payment.productIdentifier] }
            if product == nil {
                _ = try await products(for: [payment.productIdentifier])
                product = state.withLock { $0.products[payment.productIdentifier] }
            }
            guard let product else {
                throw StoreError(
                    .productUnavailable,
                    message: "the store does not sell \(payment.productIdentifier) here"
                )
            }
            let request = SKMutablePayment(product: product)
            request.quantity = payment.quantity
            request.applicationUsername = payment.applicationUsername
            if let discount = payment.paymentDiscount {
                request.paymentDiscount = SKPaymentDiscount(
                    identifier: discount.identifier,
                    keyIdentifier: discount.keyIdentifier,
                    nonce: discount.nonce,
                    signature: discount.signature,
                    timestamp: NSNumber(value: discount.timestamp)
                )
            }
            queue.add(request)
        }

        public func transactions() -> [StoreKit1Transaction] { queue.transactions.map(read) }

        public func finish(handle: String) {
            guard let transaction = state.withLock({ $0.transactions.removeValue(forKey: handle) }) else { return }
            queue.finishTransaction(transaction)
        }

        public func restoreCompletedTransactions(applicationUsername: String?) {
            queue.restoreCompletedTransactions(withApplicationUsername: applicationUsername)
        }

        public func appReceipt() -> Data? { AppReceiptFile.read() }

        public func refreshReceipt() async throws {
            let request = SKReceiptRefreshRequest(receiptProperties: nil)
            request.delegate = self
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                state.withLock { $0.refreshRequests[ObjectIdentifier(request)] = (request, continuation) }
                request.start()
            }
        }

        // MARK: SKPaymentTransactionObserver

        public func paymentQueue(_ queue: SKPaymentQueue, updatedTransactions transactions: [SKPaymentTransaction]) {
            let read = transactions.map(read)
            state.withLock { $0.handler }?(.updated(read))
        }

        public func paymentQueueRestoreCompletedTransactionsFinished(_ queue: SKPaymentQueue) {
            state.withLock { $0.handler }?(.restoreFinished)
        }

        public func paymentQueue(_ queue: SKPaymentQueue, restoreCompletedTransactionsFailedWithError error: any Error)
        {
            let code = (error as? SKError)?.code.rawValue ?? SKError.Code.unknown.rawValue
            state.withLock { $0.handler }?(.restoreFailed(code: code, message: error.localizedDescription))
        }

        // MARK: SKProductsRequestDelegate, SKRequestDelegate

        public func productsRequest(_ request: SKProductsRequest, didReceive response: SKProductsResponse) {
            // StoreKit's response stays here: the products are kept for payments, and TillClient's values go on.
            let lookup = ProductLookup(
                products: response.products.map(Self.storeProduct),
                invalidProductIds: response.invalidProductIdentifiers
            )
            let waiting = state.withLock { state in
                for product in response.products { state.products[product.productIdentifier] = product }
                return state.productRequests.removeValue(forKey: ObjectIdentifier(request))
            }
            waiting?.1.resume(returning: lookup)
        }

        public func requestDidFinish(_ request: SKRequest) {
            state.withLock { $0.refreshRequests.removeValue(forKey: ObjectIdentifier(request)) }?.1.resume()
        }

        public func request(_ request: SKRequest, didFailWithError error: any Error) {
            let code = (error as? SKError)?.code.rawValue ?? SKError.Code.unknown.rawValue
            let failure = StoreError(StoreError.Code(skErrorCode: code), message: error.localizedDescription)
            let id = ObjectIdentifier(request)
            let (products, refresh) = state.withLock {
                ($0.productRequests.removeValue(forKey: id), $0.refreshRequests.removeValue(forKey: id))
            }
            products?.1.resume(throwing: failure)
            refresh?.1.resume(throwing: failure)
        }

        // MARK: Reading StoreKit's values

        /// A transaction read, and kept by its handle until it is finished.
        func read(_ transaction: SKPaymentTransaction) -> StoreKit1Transaction {
            // StoreKit updates one object as its transaction changes state: its identity is the handle.
            let handle = "sk1-\(UInt(bitPattern: ObjectIdentifier(transaction).hashValue))"
            state.withLock { $0.transactions[handle] = transaction }
            var read = StoreKit1Transaction(
                handle: handle,
                state: .purchasing,
                transactionIdentifier: transaction.transactionIdentifier,
                originalTransactionIdentifier: transaction.original?.transactionIdentifier,
                productIdentifier: transaction.payment.productIdentifier,
                quantity: transaction.payment.quantity,
                applicationUsername: transaction.payment.applicationUsername,
                transactionDate: transaction.transactionDate
            )
            switch transaction.transactionState {
            case .purchasing: read.state = .purchasing
            case .purchased: read.state = .purchased
            case .failed: read.state = .failed
            case .restored: read.state = .restored
            case .deferred: read.state = .deferred
            @unknown default: read.state = .purchasing
            }
            if let error = transaction.error {
                read.errorCode = (error as? SKError)?.code.rawValue ?? SKError.Code.unknown.rawValue
                read.errorMessage = error.localizedDescription
            }
            return read
        }

        static func storeProduct(_ product: SKProduct) -> StoreProduct {
            var subscription: StoreSubscriptionInfo?
            if let period = product.subscriptionPeriod {
                subscription = StoreSubscriptionInfo(
                    groupId: product.subscriptionGroupIdentifier ?? product.productIdentifier,
                    period: Self.period(period),
                    introductoryOffer: product.introductoryPrice.map(offer),
                    promotionalOffers: product.discounts.map(offer)
                )
            }
            return StoreProduct(
                id: product.productIdentifier,
                type: subscription == nil ? nil : .autoRenewable,
                displayName: product.localizedTitle,
                description: product.localizedDescription,
                price: product.price.decimalValue,
                displayPrice: displayPrice(product.price, locale: product.priceLocale),
                currencyCode: product.priceLocale.currencyCode ?? "",
                isFamilyShareable: product.isFamilyShareable,
                subscription: subscription
            )
        }

        static func offer(_ discount: SKProductDiscount) -> StoreSubscriptionOffer {
            let mode: StoreSubscriptionOffer.PaymentMode
            switch discount.paymentMode {
            case .freeTrial: mode = .freeTrial
            case .payUpFront: mode = .payUpFront
            case .payAsYouGo: mode = .payAsYouGo
            @unknown default: mode = .payAsYouGo
            }
            return StoreSubscriptionOffer(
                id: discount.identifier,
                type: discount.type == .introductory ? .introductory : .promotional,
                paymentMode: mode,
                price: discount.price.decimalValue,
                displayPrice: displayPrice(discount.price, locale: discount.priceLocale),
                period: period(discount.subscriptionPeriod),
                periodCount: discount.numberOfPeriods
            )
        }

        static func period(_ period: SKProductSubscriptionPeriod) -> StoreSubscriptionPeriod {
            let unit: StoreSubscriptionPeriod.Unit
            switch period.unit {
            case .day: unit = .day
            case .week: unit = .week
            case .month: unit = .month
            case .year: unit = .year
            @unknown default: unit = .day
            }
            return StoreSubscriptionPeriod(value: period.numberOfUnits, unit: unit)
        }

        /// The price as the storefront writes it, in its locale.
        static func displayPrice(_ price: NSDecimalNumber, locale: Locale) -> String {
            let formatter = NumberFormatter()
            formatter.numberStyle = .currency
            formatter.locale = locale
            return formatter.string(from: price) ?? price.stringValue
        }
    }
    extension StoreKit1Storefront where Kit == SystemStoreKit1 {
        /// The storefront over Apple's StoreKit 1, observing the default payment queue from now on. Make it once, at
        /// launch.
        ///
        /// - Parameter finishesFailedPayments: false when the app's own StoreKit code finishes every transaction.
        public init(finishesFailedPayments: Bool = true) {
            self.init(kit: SystemStoreKit1(), finishesFailedPayments: finishesFailedPayments)
        }
    }

    extension PurchaseCoordinator where Store == StoreKit1Storefront<SystemStoreKit1> {
        /// Records a transaction the app's own StoreKit 1 observer has: a purchased or restored one is recorded
        /// (see ``record(_:)``); a failed one is reported; a purchasing or deferred one is pending.
        public func record(_ transaction: SKPaymentTransaction) async -> PurchaseOutcome {
            let read = storefront.kit.read(transaction)
            switch read.state {
            case .purchased, .restored:
                return await record(.verified(StoreKit1Storefront<SystemStoreKit1>.Queue.transaction(read)))
            case .failed:
                return PurchaseOutcome.refusal(
                    productId: read.productIdentifier,
                    StoreKit1Storefront<SystemStoreKit1>.Queue.error(read)
                )
            case .purchasing, .deferred:
                return .pending(PendingPurchase(productId: read.productIdentifier, quantity: read.quantity))
            }
        }
    }
#endif
