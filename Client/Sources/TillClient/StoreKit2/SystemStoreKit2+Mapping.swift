#if canImport(StoreKit)
    import Foundation
    import StoreKit
    import TillCore

    // Compiled for real only on Apple platforms; type-checked on Linux against the stand-in (docs/client.md).

    /// StoreKit 2's values as TillClient's.
    extension SystemStoreKit2 {
        /// A product with its subscription's offers, and this customer's eligibility for the introductory one.
        static func storeProduct(_ product: Product) async -> StoreProduct {
            var subscription: StoreSubscriptionInfo?
            if let info = product.subscription {
                var winBack: [StoreSubscriptionOffer] = []
                if #available(iOS 18.0, macOS 15.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) {
                    winBack = info.winBackOffers.map(offer)
                }
                subscription = StoreSubscriptionInfo(
                    groupId: info.subscriptionGroupID,
                    period: period(info.subscriptionPeriod),
                    introductoryOffer: info.introductoryOffer.map(offer),
                    isEligibleForIntroOffer: await info.isEligibleForIntroOffer,
                    promotionalOffers: info.promotionalOffers.map(offer),
                    winBackOffers: winBack
                )
            }
            return StoreProduct(
                id: product.id,
                type: productType(product.type),
                displayName: product.displayName,
                description: product.description,
                price: product.price,
                displayPrice: product.displayPrice,
                currencyCode: product.priceFormatStyle.currencyCode,
                isFamilyShareable: product.isFamilyShareable,
                subscription: subscription
            )
        }

        static func productType(_ type: Product.ProductType) -> ProductType? {
            switch type {
            case .consumable: .consumable
            case .nonConsumable: .nonConsumable
            case .autoRenewable: .autoRenewable
            case .nonRenewable: .nonRenewing
            default: nil
            }
        }

        static func offer(_ offer: Product.SubscriptionOffer) -> StoreSubscriptionOffer {
            StoreSubscriptionOffer(
                id: offer.id,
                type: offerType(offer.type),
                paymentMode: paymentMode(offer.paymentMode),
                price: offer.price,
                displayPrice: offer.displayPrice,
                period: period(offer.period),
                periodCount: offer.periodCount
            )
        }

        static func offerType(_ type: Product.SubscriptionOffer.OfferType) -> StoreSubscriptionOffer.OfferType {
            if type == .introductory { return .introductory }
            if #available(iOS 18.0, macOS 15.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *), type == .winBack {
                return .winBack
            }
            return .promotional
        }

        static func paymentMode(_ mode: Product.SubscriptionOffer.PaymentMode) -> StoreSubscriptionOffer.PaymentMode {
            switch mode {
            case .freeTrial: .freeTrial
            case .payUpFront: .payUpFront
            default: .payAsYouGo
            }
        }

        static func period(_ period: Product.SubscriptionPeriod) -> StoreSubscriptionPeriod {
            let unit: StoreSubscriptionPeriod.Unit
            switch period.unit {
            case .day: unit = .day
            case .week: unit = .week
            case .month: unit = .month
            case .year: unit = .year
            @unknown default: unit = .day
            }
            return StoreSubscriptionPeriod(value: period.value, unit: unit)
        }

        /// A transaction as StoreKit 2 signed it, verified or not, with its JWS.
        static func signed(_ verification: VerificationResult<Transaction>) -> StoreKit2Signed<Transaction> {
            let transaction = verification.unsafePayloadValue
            var value = StoreTransaction(
                id: String(transaction.id),
                transactionId: String(transaction.id),
                originalTransactionId: String(transaction.originalID),
                productId: transaction.productID,
                productType: productType(transaction.productType),
                purchaseDate: transaction.purchaseDate,
                quantity: transaction.purchasedQuantity,
                appAccountToken: transaction.appAccountToken,
                ownership: transaction.ownershipType == .familyShared ? .familyShared : .purchased,
                expirationDate: transaction.expirationDate,
                revocationDate: transaction.revocationDate,
                isUpgraded: transaction.isUpgraded,
                signedTransaction: verification.jwsRepresentation
            )
            if let reason = transaction.revocationReason {
                value.revocationReason = reason == .developerIssue ? .developerIssue : .other
            }
            switch verification {
            case .verified:
                return StoreKit2Signed(transaction: transaction, value: .verified(value))
            case .unverified(_, let error):
                return StoreKit2Signed(transaction: transaction, value: .unverified(value, verificationError(error)))
            }
        }

        /// Why StoreKit could not verify a signed value (a transaction, the AppTransaction, renewal info).
        static func verificationError<Signed>(_ error: VerificationResult<Signed>.VerificationError)
            -> StoreVerificationError
        {
            let reason: StoreVerificationError.Reason
            switch error {
            case .revokedCertificate: reason = .revokedCertificate
            case .invalidCertificateChain: reason = .invalidCertificateChain
            case .invalidDeviceVerification: reason = .invalidDeviceVerification
            case .invalidEncoding: reason = .invalidEncoding
            case .invalidSignature: reason = .invalidSignature
            case .missingRequiredProperties: reason = .missingRequiredProperties
            @unknown default: reason = .unknown
            }
            return StoreVerificationError(reason, message: error.localizedDescription)
        }

        static func renewalState(_ state: Product.SubscriptionInfo.RenewalState)
            -> StoreSubscriptionStatus.RenewalState
        {
            switch state {
            case .subscribed: .subscribed
            case .expired: .expired
            case .inBillingRetryPeriod: .inBillingRetryPeriod
            case .inGracePeriod: .inGracePeriod
            case .revoked: .revoked
            default: .expired
            }
        }

        /// The AppTransaction's own id: in the SDKs from iOS 18.4 on (Xcode 16.3, Swift 6.1), back-deployed to iOS 16
        /// with AppTransaction itself; an app built with an older Xcode sends the signed AppTransaction without it.
        @available(iOS 16.0, macOS 13.0, tvOS 16.0, watchOS 9.0, visionOS 1.0, *)
        static func appTransactionID(of app: AppTransaction) -> String? {
            #if compiler(>=6.1)
                app.appTransactionID
            #else
                nil
            #endif
        }

        /// StoreKit 2's errors (`StoreKitError`, `Product.PurchaseError`) as ``StoreError``.
        static func storeError(_ error: any Error) -> StoreError {
            if let error = error as? StoreError { return error }
            let message = error.localizedDescription
            if let error = error as? StoreKitError {
                switch error {
                case .userCancelled: return StoreError(.userCancelled, message: message)
                case .networkError: return StoreError(.networkError, message: message)
                case .systemError: return StoreError(.systemError, message: message)
                case .notAvailableInStorefront: return StoreError(.notAvailableInStorefront, message: message)
                case .unknown: return StoreError(.unknown, message: message)
                default:
                    // Cases newer than the floors: `notEntitled` from iOS 15.4; `unsupported` from iOS 18.4, and
                    // only in the SDKs from 18.4 on (Xcode 16.3, Swift 6.1).
                    if #available(iOS 15.4, macOS 12.3, tvOS 15.4, watchOS 8.5, visionOS 1.0, *),
                        case .notEntitled = error
                    {
                        return StoreError(.notEntitled, message: message)
                    }
                    #if compiler(>=6.1)
                        if #available(iOS 18.4, macOS 15.4, tvOS 18.4, watchOS 11.4, visionOS 2.4, *),
                            case .unsupported = error
                        {
                            return StoreError(.unsupported, message: message)
                        }
                    #endif
                    return StoreError(.unknown, message: message)
                }
            }
            if let error = error as? Product.PurchaseError {
                switch error {
                case .invalidQuantity: return StoreError(.invalidQuantity, message: message)
                case .productUnavailable: return StoreError(.productUnavailable, message: message)
                case .purchaseNotAllowed: return StoreError(.purchaseNotAllowed, message: message)
                case .ineligibleForOffer: return StoreError(.ineligibleForOffer, message: message)
                case .invalidOfferIdentifier: return StoreError(.invalidOfferIdentifier, message: message)
                case .invalidOfferPrice: return StoreError(.invalidOfferPrice, message: message)
                case .invalidOfferSignature: return StoreError(.invalidOfferSignature, message: message)
                case .missingOfferParameters: return StoreError(.missingOfferParameters, message: message)
                @unknown default: return StoreError(.unknown, message: message)
                }
            }
            return StoreError(.unknown, message: message)
        }
    }

    /// The app receipt on disk (`Bundle.main.appStoreReceiptURL`), which StoreKit 1 and the server's receipt
    /// verification read.
    enum AppReceiptFile {
        static func read() -> Data? {
            guard let url = Bundle.main.appStoreReceiptURL else { return nil }
            return try? Data(contentsOf: url)
        }
    }
#endif
