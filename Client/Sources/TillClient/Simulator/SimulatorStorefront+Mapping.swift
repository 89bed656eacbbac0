import Foundation
import TillCore
import TillSimulatorContract

/// The device API's answers (the types generated from its document) as TillClient's values.
extension SimulatorStorefront {
    /// A purchased or restored queue entry. Its JWS says what StoreKit 2 would (ownership, expiry, revocation);
    /// the entry says how it came (a restore has its own transaction id, and brings back the original).
    static func transaction(_ entry: Components.Schemas.QueueTransaction) throws -> StoreTransaction {
        guard let transactionId = entry.transactionId else {
            throw TillClientError(.invalidResponse, message: "queue entry \(entry.id) has no transaction id")
        }
        let signed = entry.signedTransaction.flatMap { SignedPayload.decode(SignedPayload.Transaction.self, from: $0) }
        var transaction =
            signed?.storeTransaction(id: entry.id, jws: entry.signedTransaction ?? "", requiresFinish: true)
            ?? StoreTransaction(
                id: entry.id,
                transactionId: transactionId,
                productId: entry.productId,
                purchaseDate: Date()
            )
        transaction.transactionId = transactionId
        transaction.originalTransactionId = entry.originalTransactionId ?? transactionId
        transaction.state = entry.state == .restored ? .restored : .purchased
        if let date = entry.purchaseDate { transaction.purchaseDate = Date(milliseconds: date) }
        if let quantity = entry.quantity { transaction.quantity = quantity }
        transaction.signedTransaction = entry.signedTransaction
        transaction.transactionReceipt = entry.transactionReceipt
        return transaction
    }

    /// Why the store failed a payment or a restore, from StoreKit 1's code.
    static func error(_ error: Components.Schemas.StoreKitError?) -> StoreError {
        guard let error else { return StoreError(.unknown, message: "the store failed without saying why") }
        return StoreError(StoreError.Code(skErrorCode: error.code), message: error.message)
    }

    static func storeProduct(_ product: Components.Schemas.Product) -> StoreProduct {
        var subscription: StoreSubscriptionInfo?
        if let period = product.subscriptionPeriod.flatMap({ StoreSubscriptionPeriod(iso8601: $0.rawValue) }) {
            subscription = StoreSubscriptionInfo(
                groupId: product.subscriptionGroup ?? product.productId,
                period: period,
                introductoryOffer: product.introductoryOffer.flatMap(offer),
                isEligibleForIntroOffer: product.isEligibleForIntroOffer,
                promotionalOffers: (product.promotionalOffers ?? []).compactMap(offer),
                winBackOffers: (product.winBackOffers ?? []).compactMap(offer)
            )
        }
        return StoreProduct(
            id: product.productId,
            type: ProductType(rawValue: product._type.rawValue),
            displayName: product.title,
            description: product.description,
            price: Decimal(product.price) / 1000,
            displayPrice: product.displayPrice,
            currencyCode: product.currency,
            isFamilyShareable: product.familyShareable,
            subscription: subscription
        )
    }

    static func offer(_ offer: Components.Schemas.Offer) -> StoreSubscriptionOffer? {
        guard let period = offer.period.flatMap(StoreSubscriptionPeriod.init(iso8601:)) else { return nil }
        let type: StoreSubscriptionOffer.OfferType
        switch offer._type {
        case .introductory: type = .introductory
        case .promotional: type = .promotional
        case .offerCode: type = .offerCode
        case .winBack: type = .winBack
        }
        let mode: StoreSubscriptionOffer.PaymentMode
        switch offer.paymentMode {
        case .freeTrial: mode = .freeTrial
        case .payAsYouGo: mode = .payAsYouGo
        case .payUpFront: mode = .payUpFront
        }
        return StoreSubscriptionOffer(
            id: offer.id,
            type: type,
            paymentMode: mode,
            price: Decimal(offer.price) / 1000,
            displayPrice: offer.displayPrice,
            period: period,
            periodCount: offer.periodCount
        )
    }
}
