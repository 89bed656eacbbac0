import Foundation
import SQLKit
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

/// The App Store's rules for who gets which offer.
extension Offers {
    /// The offer a payment gets, or why it fails (StoreKit's `SKError` code).
    ///
    /// - A promotional offer needs a valid signature (``verifySignatureV1(_:app:productId:accountToken:on:)`` or
    ///   the JWS), and a customer who has or had a subscription of the app.
    /// - A win-back offer needs a lapsed subscription in the product's group that meets the offer's criteria.
    /// - An offer code needs a code of the product not redeemed before (one-time-use), or a custom code this
    ///   customer has not redeemed and whose limit is not reached.
    /// - Otherwise the product's introductory offer applies to a customer who never had one in the group and is
    ///   not subscribed in it now, unless a signed eligibility (`introductoryOfferEligibility`) says otherwise.
    func choose(
        for request: PaymentRequest,
        account: SimAccount,
        app: SimApp,
        product: SimProduct,
        on db: any SQLDatabase
    ) async throws -> Result<OfferChoice?, StoreKitErrorCode> {
        let environment = account.environment
        let group = product.subscriptionGroup ?? product.productId
        let subscription =
            product.type == .autoRenewable
            ? try await store.subscriptions.subscription(
                accountId: account.id,
                appAppleId: app.appAppleId,
                environment: environment,
                group: group,
                on: db
            ) : nil
        let chosen = [request.promotionalOffer != nil, request.winBackOfferId != nil, request.offerCode != nil]
        guard chosen.filter({ $0 }).count <= 1 else { return .failure(.missingOfferParams) }

        if let promotional = request.promotionalOffer {
            guard product.type == .autoRenewable,
                let offer = try await store.offers.offer(
                    appAppleId: app.appAppleId,
                    productId: product.productId,
                    kind: .promotional,
                    offerIdentifier: promotional.offerIdentifier,
                    on: db
                )
            else { return .failure(.invalidOfferIdentifier) }
            if let jws = promotional.compactJWS {
                guard let claims = try await verifySignedRequest(jws, audience: "promotional-offer", app: app, on: db),
                    claims.productId == product.productId, claims.offerIdentifier == promotional.offerIdentifier
                else { return .failure(.invalidSignature) }
                if let named = claims.transactionId,
                    try await !belongs(named, to: account, app: app, environment: environment, on: db)
                {
                    return .failure(.invalidSignature)
                }
            } else if let failure = try await verifySignatureV1(
                promotional,
                app: app,
                productId: product.productId,
                accountToken: request.appAccountToken ?? request.applicationUsername ?? "",
                on: db
            ) {
                return .failure(failure)
            }
            let subscribed = try await !store.subscriptions.subscriptions(
                accountId: account.id,
                appAppleId: app.appAppleId,
                environment: environment,
                on: db
            ).isEmpty
            guard subscribed, offer.isAvailable(in: account.storefront) else { return .failure(.ineligibleForOffer) }
            return .success(OfferChoice(offer: offer))
        }

        if let winBackId = request.winBackOfferId {
            guard product.type == .autoRenewable,
                let offer = try await store.offers.offer(
                    appAppleId: app.appAppleId,
                    productId: product.productId,
                    kind: .winBack,
                    offerIdentifier: winBackId,
                    on: db
                )
            else { return .failure(.invalidOfferIdentifier) }
            guard let subscription, offer.isAvailable(in: account.storefront),
                try await winBackEligible(offer, subscription: subscription, on: db)
            else { return .failure(.ineligibleForOffer) }
            return .success(OfferChoice(offer: offer))
        }

        if let code = request.offerCode {
            switch try await offer(forCode: code, account: account, app: app, on: db) {
            case .success(let choice):
                guard choice.offer.productId == product.productId else { return .failure(.invalidOfferIdentifier) }
                guard choice.offer.isAvailable(in: account.storefront) else { return .failure(.ineligibleForOffer) }
                return .success(choice)
            case .failure: return .failure(.invalidOfferIdentifier)
            }
        }

        guard product.type == .autoRenewable,
            let introductory = try await store.offers.offer(
                appAppleId: app.appAppleId,
                productId: product.productId,
                kind: .introductory,
                offerIdentifier: "",
                on: db
            )
        else { return .success(nil) }
        var eligible = try await introductoryEligible(account: account, app: app, group: group, on: db)
        if let jws = request.introductoryOfferEligibility {
            guard
                let claims = try await verifySignedRequest(
                    jws,
                    audience: "introductory-offer-eligibility",
                    app: app,
                    on: db
                ),
                claims.productId == product.productId, let allow = claims.allowIntroductoryOffer,
                let named = claims.transactionId,
                try await belongs(named, to: account, app: app, environment: environment, on: db)
            else { return .failure(.invalidSignature) }
            eligible = allow
        }
        // Existing subscribers changing plan are never eligible, whatever they had before; nor is a customer in a
        // storefront the offer is not sold in.
        if let subscription, Self.isActive(subscription) { eligible = false }
        if !introductory.isAvailable(in: account.storefront) { eligible = false }
        return .success(eligible ? OfferChoice(offer: introductory) : nil)
    }

    /// Whether the customer may have the group's introductory offer: they never had one in the group.
    func introductoryEligible(account: SimAccount, app: SimApp, group: String, on db: any SQLDatabase) async throws
        -> Bool
    {
        try await !store.purchases.transactions(
            accountId: account.id,
            appAppleId: app.appAppleId,
            environment: account.environment,
            on: db
        ).contains {
            ($0.subscriptionGroup ?? $0.productId) == group && $0.offerType == OfferType.introductoryOffer.rawValue
        }
    }

    /// The one-time-use code or custom code, checked for this customer.
    func offer(forCode code: String, account: SimAccount, app: SimApp, on db: any SQLDatabase) async throws
        -> Result<OfferChoice, OfferRefusal>
    {
        let normalized = code.uppercased()
        if let oneTime = try await store.offers.offerCode(normalized, on: db), oneTime.appAppleId == app.appAppleId {
            guard try await store.offers.redemptions(code: normalized, on: db).isEmpty else {
                return .failure(OfferRefusal(.codeRedeemed, "the code \(code) was already redeemed"))
            }
            guard
                let offer = try await store.offers.offer(
                    appAppleId: app.appAppleId,
                    productId: oneTime.productId,
                    kind: .offerCode,
                    offerIdentifier: oneTime.offerIdentifier,
                    on: db
                )
            else { return .failure(OfferRefusal(.offerCodeNotFound, "no offer code \(code)")) }
            guard offer.isAvailable(in: account.storefront) else { return .failure(Self.notSold(code, account)) }
            return .success(OfferChoice(offer: offer, code: normalized))
        }
        guard let offer = try await store.offers.offer(customCode: normalized, appAppleId: app.appAppleId, on: db)
        else {
            return .failure(OfferRefusal(.offerCodeNotFound, "no offer code \(code)"))
        }
        let redemptions = try await store.offers.redemptions(code: normalized, on: db)
        guard !redemptions.contains(where: { $0.accountId == account.id }) else {
            return .failure(OfferRefusal(.codeRedeemed, "this customer already redeemed \(code)"))
        }
        if let limit = offer.redemptionLimit, redemptions.count >= limit {
            return .failure(OfferRefusal(.codeLimitReached, "the code \(code) reached its \(limit) redemptions"))
        }
        guard offer.isAvailable(in: account.storefront) else { return .failure(Self.notSold(code, account)) }
        return .success(OfferChoice(offer: offer, code: normalized))
    }

    // MARK: Win-back

    /// The win-back offers a lapsed subscription may redeem now, best first (the lowest price; free trials first):
    /// renewal info's `eligibleWinBackOfferIds`. Empty for a subscription that is active, in billing retry or in
    /// its grace period.
    func eligibleWinBackOfferIds(_ subscription: SimSubscription, on db: any SQLDatabase) async throws -> [String] {
        guard subscription.status == AppStoreSubscriptionStatus.expired.rawValue else { return [] }
        let storefront =
            try await store.appStoreConnect.account(id: subscription.accountId, on: db)?.storefront ?? "USA"
        var eligible: [SimOffer] = []
        for product in try await store.appStoreConnect.products(appAppleId: subscription.appAppleId, on: db)
        where product.subscriptionGroup == subscription.subscriptionGroup {
            for offer in try await store.offers.offers(
                appAppleId: subscription.appAppleId,
                productId: product.productId,
                on: db
            )
            where offer.kind == .winBack {
                if try await winBackEligible(offer, subscription: subscription, on: db) { eligible.append(offer) }
            }
        }
        return eligible.sorted {
            ($0.prices[storefront]?.price ?? 0, $0.offerIdentifier) < (
                $1.prices[storefront]?.price ?? 0, $1.offerIdentifier
            )
        }.map(\.offerIdentifier)
    }

    /// A churned subscription (expired, not in billing retry or grace) whose paid time and time since expiry meet
    /// the offer's criteria; days are scaled by the sandbox's renewal rate.
    func winBackEligible(_ offer: SimOffer, subscription: SimSubscription, on db: any SQLDatabase) async throws -> Bool
    {
        guard subscription.status == AppStoreSubscriptionStatus.expired.rawValue else { return false }
        let environment = subscription.environment
        let day = (environment == .production ? RenewalRate.realTime : clock.rate).scale(days: 1) * 1000
        let sinceExpiry = Double(clock.nowMilliseconds - subscription.expiresDate) / day
        if let minimum = offer.minimumDaysSinceExpiry, sinceExpiry < Double(minimum) { return false }
        if let maximum = offer.maximumDaysSinceExpiry, sinceExpiry > Double(maximum) { return false }
        if let minimum = offer.minimumPaidDays {
            let paid = try await store.purchases.transactions(
                originalTransactionId: subscription.originalTransactionId,
                on: db
            )
            .filter { $0.price > 0 && $0.revocationDate == nil }
            .reduce(0.0) { $0 + Double(($1.expiresDate ?? $1.purchaseDate) - $1.purchaseDate) / day }
            if paid < Double(minimum) { return false }
        }
        return true
    }

    // MARK: Helpers

    static func notSold(_ code: String, _ account: SimAccount) -> OfferRefusal {
        OfferRefusal(.offerNotInStorefront, "the offer of code \(code) is not sold in storefront \(account.storefront)")
    }

    static func isActive(_ subscription: SimSubscription) -> Bool {
        [AppStoreSubscriptionStatus.active, .gracePeriod, .billingRetry].map(\.rawValue).contains(subscription.status)
    }

    /// Whether a transaction id (or the customer's app transaction id) names this customer.
    private func belongs(
        _ transactionId: String,
        to account: SimAccount,
        app: SimApp,
        environment: AppStoreEnvironment,
        on db: any SQLDatabase
    ) async throws -> Bool {
        if let tx = try await store.purchases.transaction(id: transactionId, on: db) {
            return tx.accountId == account.id && tx.appAppleId == app.appAppleId
        }
        return Receipts.appTransactionId(accountId: account.id, appAppleId: app.appAppleId) == transactionId
    }
}
