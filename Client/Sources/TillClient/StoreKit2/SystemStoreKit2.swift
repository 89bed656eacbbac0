#if canImport(StoreKit)
    import Foundation
    import StoreKit
    import TillCore

    // Compiled for real only on Apple platforms. On Linux, CI type-checks this file against a declaration-only
    // stand-in of exactly the StoreKit API it uses (Tests/AppleStandIns, docs/client.md).

    /// Apple's StoreKit 2 behind ``StoreKit2Storefront``: each call is StoreKit's, its answers mapped to TillClient's
    /// values and its errors to ``StoreError``.
    public struct SystemStoreKit2: StoreKit2Interface {
        public typealias Transaction = StoreKit.Transaction

        /// The products looked up, for `purchase`.
        private let looked = Locked<[String: Product]>([:])

        public init() {}

        public func canMakePayments() async -> Bool { AppStore.canMakePayments }

        public func products(for identifiers: [String]) async throws -> [StoreProduct] {
            let found: [Product]
            do {
                found = try await Product.products(for: identifiers)
            } catch {
                throw Self.storeError(error)
            }
            looked.withLock { looked in
                for product in found { looked[product.id] = product }
            }
            var products: [StoreProduct] = []
            for product in found { products.append(await Self.storeProduct(product)) }
            return products
        }

        public func purchase(productId: String, options: [StoreKit2PurchaseOption]) async throws
            -> StoreKit2PurchaseResult<Transaction>
        {
            let product = try await product(productId)
            var purchaseOptions: Set<Product.PurchaseOption> = []
            for option in options {
                switch option {
                case .quantity(let quantity):
                    purchaseOptions.insert(.quantity(quantity))
                case .appAccountToken(let token):
                    purchaseOptions.insert(.appAccountToken(token))
                case .promotionalOffer(let offerID, let keyID, let nonce, let signature, let timestamp):
                    purchaseOptions.insert(
                        .promotionalOffer(
                            offerID: offerID,
                            keyID: keyID,
                            nonce: nonce,
                            signature: signature,
                            timestamp: timestamp
                        )
                    )
                case .promotionalOfferJWS(let offerID, let compactJWS):
                    // In the iOS 26 SDK (Xcode 26, Swift 6.2) and back-deployed to iOS 15 from it: an app built with
                    // an older Xcode asks the server for the original signature instead (docs/offers.md).
                    #if compiler(>=6.2)
                        purchaseOptions.formUnion(
                            Product.PurchaseOption.promotionalOffer(offerID, compactJWS: compactJWS)
                        )
                    #else
                        throw StoreError(
                            .unsupported,
                            message: "a promotional offer signed as a JWS needs an app built with Xcode 26; "
                                + "ask the server for the original signature (\"format\":\"signature\")"
                        )
                    #endif
                case .introductoryOfferEligibility(let compactJWS):
                    // In the iOS 18.4 SDK (Xcode 16.3, Swift 6.1) and back-deployed to iOS 15 from it.
                    #if compiler(>=6.1)
                        purchaseOptions.insert(.introductoryOfferEligibility(compactJWS: compactJWS))
                    #else
                        throw StoreError(
                            .unsupported,
                            message: "a signed introductory-offer eligibility needs an app built with Xcode 16.3 or later"
                        )
                    #endif
                case .winBackOffer(let offerID):
                    guard #available(iOS 18.0, macOS 15.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
                        throw StoreError(.unsupported, message: "win-back offers need iOS 18")
                    }
                    guard let offer = product.subscription?.winBackOffers.first(where: { $0.id == offerID }) else {
                        throw StoreError(
                            .invalidOfferIdentifier,
                            message: "\(productId) has no win-back offer \(offerID)"
                        )
                    }
                    purchaseOptions.insert(.winBackOffer(offer))
                }
            }
            return try await Self.purchase(product, options: purchaseOptions)
        }

        /// `product.purchase(options:)`, which visionOS does not have: there, a purchase is made with SwiftUI's
        /// `PurchaseAction` or a store view, and handed to ``PurchaseCoordinator/record(_:)-(VerificationResult<Transaction>)``.
        /// StoreKit's answer is read on the main actor, where it was made; only TillClient's values leave it.
        @MainActor
        private static func purchase(_ product: Product, options: Set<Product.PurchaseOption>) async throws
            -> StoreKit2PurchaseResult<Transaction>
        {
            #if os(visionOS)
                throw StoreError(
                    .unsupported,
                    message: "on visionOS, buy with SwiftUI's PurchaseAction or a store view and record the result"
                )
            #else
                let result: Product.PurchaseResult
                do {
                    result = try await product.purchase(options: options)
                } catch {
                    throw storeError(error)
                }
                switch result {
                case .success(let verification):
                    return .success(signed(verification))
                case .userCancelled:
                    return .userCancelled
                case .pending:
                    return .pending
                @unknown default:
                    throw StoreError(.unknown, message: "a purchase result this version of TillClient does not know")
                }
            #endif
        }

        public func updates() -> AsyncStream<StoreKit2Signed<Transaction>> {
            AsyncStream { continuation in
                let task = Task {
                    for await verification in Transaction.updates {
                        continuation.yield(Self.signed(verification))
                    }
                    continuation.finish()
                }
                continuation.onTermination = { _ in task.cancel() }
            }
        }

        public func unfinished() async -> [StoreKit2Signed<Transaction>] {
            var all: [StoreKit2Signed<Transaction>] = []
            for await verification in Transaction.unfinished { all.append(Self.signed(verification)) }
            return all
        }

        public func currentEntitlements() async -> [StoreKit2Signed<Transaction>] {
            var all: [StoreKit2Signed<Transaction>] = []
            for await verification in Transaction.currentEntitlements { all.append(Self.signed(verification)) }
            return all
        }

        public func finish(_ transaction: Transaction) async { await transaction.finish() }

        public func sync() async throws {
            do {
                try await AppStore.sync()
            } catch {
                throw Self.storeError(error)
            }
        }

        public func appTransaction() async throws -> StoreVerification<StoreAppTransaction>? {
            guard #available(iOS 16.0, macOS 13.0, tvOS 16.0, watchOS 9.0, visionOS 1.0, *) else { return nil }
            let verification: VerificationResult<AppTransaction>
            do {
                verification = try await AppTransaction.shared
            } catch {
                throw Self.storeError(error)
            }
            let app = verification.unsafePayloadValue
            let value = StoreAppTransaction(
                signedAppTransaction: verification.jwsRepresentation,
                appTransactionId: Self.appTransactionID(of: app),
                bundleId: app.bundleID,
                originalAppVersion: app.originalAppVersion,
                originalPurchaseDate: app.originalPurchaseDate,
                environment: app.environment.rawValue
            )
            switch verification {
            case .verified: return .verified(value)
            case .unverified(_, let error): return .unverified(value, Self.verificationError(error))
            }
        }

        public func subscriptionStatuses(groupId: String) async throws -> [StoreSubscriptionStatus] {
            let statuses: [Product.SubscriptionInfo.Status]
            do {
                statuses = try await Product.SubscriptionInfo.status(for: groupId)
            } catch {
                throw Self.storeError(error)
            }
            return statuses.map { status in
                let renewal = status.renewalInfo
                let info = renewal.unsafePayloadValue
                let transaction = Self.signed(status.transaction).value
                let value = StoreRenewalInfo(
                    originalTransactionId: String(info.originalTransactionID),
                    autoRenewProductId: info.autoRenewPreference ?? transaction.unsafePayloadValue.productId,
                    willAutoRenew: info.willAutoRenew,
                    gracePeriodExpirationDate: info.gracePeriodExpirationDate,
                    signedRenewalInfo: renewal.jwsRepresentation
                )
                let renewalInfo: StoreVerification<StoreRenewalInfo>
                switch renewal {
                case .verified: renewalInfo = .verified(value)
                case .unverified(_, let error): renewalInfo = .unverified(value, Self.verificationError(error))
                }
                return StoreSubscriptionStatus(
                    state: Self.renewalState(status.state),
                    transaction: transaction,
                    renewalInfo: renewalInfo
                )
            }
        }

        public func appReceipt() async throws -> Data? { AppReceiptFile.read() }

        /// A product looked up before, or now.
        private func product(_ productId: String) async throws -> Product {
            if let product = looked.withLock({ $0[productId] }) { return product }
            _ = try await products(for: [productId])
            guard let product = looked.withLock({ $0[productId] }) else {
                throw StoreError(.productUnavailable, message: "the store does not sell \(productId) here")
            }
            return product
        }
    }
    extension StoreKit2Storefront where Kit == SystemStoreKit2 {
        /// The storefront over Apple's StoreKit 2.
        public init() { self.init(kit: SystemStoreKit2()) }

        /// A transaction the app's own StoreKit code has, as TillClient's value; kept, so that ``finish(_:)``
        /// finishes it.
        public func adopt(_ verification: VerificationResult<Transaction>) -> StoreVerification<StoreTransaction> {
            let signed = SystemStoreKit2.signed(verification)
            keep(signed)
            return signed.value
        }
    }

    extension PurchaseCoordinator where Store == StoreKit2Storefront<SystemStoreKit2> {
        /// Records a transaction the app's own StoreKit 2 code has: a purchase it made, a store view's
        /// `onInAppPurchaseCompletion`, its own `Transaction.updates` loop (see ``record(_:)``).
        public func record(_ verification: VerificationResult<Transaction>) async -> PurchaseOutcome {
            await record(storefront.adopt(verification))
        }
    }
#endif
