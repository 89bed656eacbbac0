import Foundation
import SQLKit
import TillCore
import TillFormats
import TillStorage

/// What a payment's offer and billing plan do to the period it starts.
extension Payments {
    /// A subscription takes the billing plan of the period that starts it.
    func commit(_ subscription: inout SimSubscription, to tx: SimTransaction) {
        subscription.billingPlanType = tx.billingPlanType == BillingPlanType.monthly.rawValue ? tx.billingPlanType : nil
        subscription.commitmentPeriod = tx.commitmentPeriod
        subscription.commitmentExpiresDate = tx.commitmentExpiresDate
        subscription.commitmentAutoRenew = tx.commitmentPeriod == nil ? nil : true
    }

    /// When a month of a commitment that starts at `start` ends.
    func commitmentMonthEnd(from start: Int64, environment: AppStoreEnvironment) -> Int64 {
        clock.expiry(of: .oneMonth, from: start, environment: environment)
    }

    /// Why a billing plan cannot be bought: it is unknown, the product has no monthly commitment plan in the
    /// customer's storefront (Apple offers none in the United States and Singapore), or the customer already has a
    /// subscription in the group running (changing to or from a commitment plan is not simulated).
    func commitmentRefusal(
        plan: String,
        product: SimProduct,
        account: SimAccount,
        app: SimApp,
        on db: any SQLDatabase
    ) async throws -> StoreKitErrorCode? {
        if plan == BillingPlanType.billedUpfront.rawValue { return nil }
        guard plan == BillingPlanType.monthly.rawValue else { return .paymentInvalid }
        guard product.monthlyCommitmentPrices?[account.storefront] != nil else { return .storeProductNotAvailable }
        let running =
            try await store.subscriptions.subscription(
                accountId: account.id,
                appAppleId: app.appAppleId,
                environment: account.environment,
                group: product.subscriptionGroup ?? product.productId,
                on: db
            ).map(Offers.isActive) ?? false
        return running ? .paymentInvalid : nil
    }

    /// Puts an offer on the period `tx` starts: its type, identifier, payment mode, length and price, and the end
    /// of a free trial or pay-up-front offer. Returns what the following renewals still get (pay as you go).
    func apply(_ offer: SimOffer, to tx: inout SimTransaction, storefront: String, regular: StorefrontPrice)
        -> AppliedOffer?
    {
        let charged = offer.price(in: storefront, regular: regular)
        tx.offerType = offer.kind.offerType.rawValue
        tx.offerIdentifier = offer.kind == .introductory ? nil : offer.offerIdentifier
        tx.offerDiscountType = offer.discountType.rawValue
        tx.offerPeriod = offer.offerPeriod
        tx.price = charged.price
        tx.currency = charged.currency
        tx.isTrial = offer.kind == .introductory && offer.discountType == .freeTrial
        if offer.discountType != .payAsYouGo, let duration = offer.duration {
            let environment = tx.environment
            let rate = environment == .production ? RenewalRate.realTime : clock.rate
            tx.expiresDate = duration.end(from: Date(milliseconds: tx.purchaseDate), rate: rate).millisecondsSince1970
        }
        guard offer.discountType == .payAsYouGo, offer.periods > 1 else { return nil }
        var remaining = pending(offer, storefront: storefront, regular: regular)
        remaining.remainingRenewals = offer.periods - 1
        return remaining
    }

    /// An offer that starts at the next renewal.
    func pending(_ offer: SimOffer, storefront: String, regular: StorefrontPrice) -> AppliedOffer {
        AppliedOffer(
            type: offer.kind.offerType.rawValue,
            identifier: offer.kind == .introductory ? nil : offer.offerIdentifier,
            discountType: offer.discountType.rawValue,
            period: offer.offerPeriod,
            price: offer.price(in: storefront, regular: regular).price,
            remainingRenewals: offer.discountType == .payAsYouGo ? offer.periods : 1
        )
    }

    /// Remembers who redeemed which offer (custom codes count their redemptions; one-time-use codes are spent).
    func recordRedemption(
        _ offer: OfferChoice?,
        account: SimAccount,
        transaction: SimTransaction,
        on db: any SQLDatabase
    ) async throws {
        guard let offer else { return }
        try await store.insert(
            SimOfferRedemption(
                id: UUID().uuidString.lowercased(),
                appAppleId: transaction.appAppleId,
                accountId: account.id,
                environment: account.environment,
                productId: offer.offer.productId,
                kind: offer.offer.kind,
                offerIdentifier: offer.offer.offerIdentifier,
                code: offer.code,
                transactionId: transaction.transactionId,
                redeemedAt: clock.nowMilliseconds
            ),
            on: db
        )
    }
}
