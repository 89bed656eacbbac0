import TillCore

extension JWSTransactionDecodedPayload {
    /// The transaction in Till's normalized form.
    ///
    /// Nil when `transactionId`, `productId`, `bundleId`, `purchaseDate` or `environment` is missing:
    /// a purchase without them cannot be recorded (and guessing the environment could count a
    /// sandbox purchase as revenue). Defaults: quantity 1, ownership `PURCHASED`, not upgraded.
    /// An introductory offer with `FREE_TRIAL` discount is a trial period; any other introductory
    /// offer is an introductory-price period, as the legacy `is_trial_period` /
    /// `is_in_intro_offer_period` flags distinguish them.
    public func purchaseTransaction() -> PurchaseTransaction? {
        guard let transactionId, let productId, let bundleId, let purchaseDate, let environment else {
            return nil
        }
        let isIntroductory = offerType == .introductoryOffer
        let isTrial = isIntroductory && offerDiscountType == .freeTrial
        return PurchaseTransaction(
            transactionId: transactionId,
            originalTransactionId: originalTransactionId,
            productId: productId,
            bundleId: bundleId,
            productType: type?.productType,
            quantity: quantity ?? 1,
            purchaseDate: purchaseDate,
            originalPurchaseDate: originalPurchaseDate,
            expiresDate: expiresDate,
            revocationDate: revocationDate,
            revocationReason: revocationReason?.rawValue,
            webOrderLineItemId: webOrderLineItemId,
            subscriptionGroupIdentifier: subscriptionGroupIdentifier,
            isUpgraded: isUpgraded ?? false,
            isTrialPeriod: isTrial,
            isInIntroOfferPeriod: isIntroductory && !isTrial,
            offerIdentifier: offerIdentifier,
            environment: environment,
            appAccountToken: appAccountToken,
            ownership: inAppOwnershipType ?? .purchased,
            price: price,
            currency: currency,
            storefront: storefront,
            billingPlanType: billingPlanType?.rawValue,
            commitment: commitmentInfo.map {
                PurchaseTransaction.Commitment(
                    billingPeriodNumber: $0.billingPeriodNumber,
                    totalBillingPeriods: $0.totalBillingPeriods,
                    expiresDate: $0.commitmentExpiresDate
                )
            }
        )
    }
}
