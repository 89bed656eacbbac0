import Foundation
import HTTPTypes
import Logging
import SQLKit
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

extension Payments {
    /// Charges the account and records the transaction a payment buys, with its subscription bookkeeping.
    func completePurchase(
        payment: inout SimPayment,
        account: SimAccount,
        app: SimApp,
        product: SimProduct,
        offer: OfferChoice?,
        committed: Bool = false,
        on db: any SQLDatabase
    ) async throws -> SimTransaction {
        let environment = account.environment
        let now = clock.nowMilliseconds
        let price = product.prices[account.storefront] ?? StorefrontPrice(price: 0, currency: "USD")
        var tx = SimTransaction(
            transactionId: try await store.nextTransactionId(environment, on: db),
            originalTransactionId: "",
            accountId: account.id,
            appAppleId: app.appAppleId,
            productId: product.productId,
            productType: product.type,
            environment: environment,
            quantity: payment.quantity,
            purchaseDate: now,
            originalPurchaseDate: now,
            expiresDate: nil,
            webOrderLineItemId: nil,
            subscriptionGroup: product.subscriptionGroup,
            appAccountToken: payment.appAccountToken,
            ownership: .purchased,
            price: product.type.isFree ? 0 : price.price * Int64(payment.quantity),
            currency: price.currency,
            storefront: account.storefront,
            storefrontId: Storefronts.id(for: account.storefront),
            transactionReason: .purchase,
            revocationDate: nil,
            revocationReason: nil,
            revocationType: nil,
            isUpgraded: false,
            offerType: nil,
            isTrial: false,
            orderId: makeOrderId(),
            deviceId: payment.deviceId,
            finished: false,
            signedSequence: try await store.nextSequence(on: db),
            createdAt: now
        )
        tx.originalTransactionId = tx.transactionId
        var notification: (NotificationType, NotificationSubtype?)?

        if let offer, product.type != .autoRenewable {
            // An offer code of a one-time product: the discounted price for each item, no duration.
            tx.offerType = OfferType.subscriptionOfferCode.rawValue
            tx.offerIdentifier = offer.offer.offerIdentifier
            tx.offerDiscountType = offer.offer.discountType.rawValue
            tx.price = offer.offer.price(in: account.storefront, regular: price).price * Int64(payment.quantity)
        }
        switch product.type {
        case .consumable, .nonRenewing:
            notification = (.oneTimeCharge, nil)
        case .nonConsumable, .freeSubscription:
            let owned = try await store.purchases.transactions(
                accountId: account.id,
                appAppleId: app.appAppleId,
                environment: environment,
                on: db
            ).first { $0.productId == product.productId && $0.revocationDate == nil }
            if let owned {
                // Already bought: the store hands it out again without charging.
                tx.originalTransactionId = owned.originalTransactionId
                tx.originalPurchaseDate = owned.originalPurchaseDate
                tx.price = 0
            } else {
                notification = (.oneTimeCharge, nil)
            }
        case .autoRenewable:
            let result = try await purchaseSubscription(
                tx: tx,
                account: account,
                app: app,
                product: product,
                offer: offer?.offer,
                committed: committed,
                on: db
            )
            tx = result.transaction
            notification = result.notification
            try await recordRedemption(offer, account: account, transaction: tx, on: db)
            if result.reusesExisting {
                try await recordPurchase(&payment, of: tx, notification: notification, app: app, on: db)
                return tx
            }
        }
        if product.type != .autoRenewable {
            try await recordRedemption(offer, account: account, transaction: tx, on: db)
        }
        try await store.insert(tx, on: db)
        try await shareWithFamily(tx, account: account, product: product, on: db)
        try await recordPurchase(&payment, of: tx, notification: notification, app: app, on: db)
        return tx
    }

    /// Marks the payment purchased by `tx` and sends the purchase's notification, if it has one.
    func recordPurchase(
        _ payment: inout SimPayment,
        of tx: SimTransaction,
        notification: (NotificationType, NotificationSubtype?)?,
        app: SimApp,
        on db: any SQLDatabase
    ) async throws {
        payment.state = .purchased
        payment.transactionId = tx.transactionId
        payment.updatedAt = clock.nowMilliseconds
        try await store.update(payment, on: db)
        if let notification {
            try await notifications.enqueueNotification(
                app: app,
                environment: tx.environment,
                type: notification.0,
                subtype: notification.1,
                transaction: tx,
                on: db
            )
        }
    }

    /// Subscribing inside a group: first purchase, resubscription, upgrade, downgrade or crossgrade, with an offer
    /// or without. An offer bought with the plan already running (a promotional offer or offer code for the current
    /// product, or with a downgrade) starts at the next renewal: no transaction now, OFFER_REDEEMED, and the
    /// renewal info names it. With an upgrade it starts now (OFFER_REDEEMED / UPGRADE). Bought to subscribe or
    /// resubscribe, it is the new period's (SUBSCRIBED).
    func purchaseSubscription(
        tx: SimTransaction,
        account: SimAccount,
        app: SimApp,
        product: SimProduct,
        offer: SimOffer?,
        committed: Bool = false,
        on db: any SQLDatabase
    ) async throws -> (
        transaction: SimTransaction, notification: (NotificationType, NotificationSubtype?)?, reusesExisting: Bool
    ) {
        var tx = tx
        let environment = account.environment
        let group = product.subscriptionGroup ?? product.productId
        let period = product.subscriptionPeriod ?? .oneMonth
        var regular = product.prices[account.storefront] ?? StorefrontPrice(price: tx.price, currency: tx.currency)
        let now = tx.purchaseDate
        tx.subscriptionGroup = group
        tx.webOrderLineItemId = try await store.nextWebOrderLineItemId(environment, on: db)
        tx.expiresDate = clock.expiry(of: period, from: now, environment: environment)
        if committed, let monthly = product.monthlyCommitmentPrices?[account.storefront] {
            // The first month of a 12-month commitment.
            regular = monthly
            tx.price = monthly.price
            tx.currency = monthly.currency
            tx.expiresDate = commitmentMonthEnd(from: now, environment: environment)
            tx.billingPlanType = BillingPlanType.monthly.rawValue
            tx.commitmentPeriod = 1
            tx.commitmentExpiresDate = clock.expiry(of: .oneYear, from: now, environment: environment)
            tx.commitmentPrice = monthly.price * 12
        } else if product.monthlyCommitmentPrices != nil {
            tx.billingPlanType = BillingPlanType.billedUpfront.rawValue
        }

        guard
            var subscription = try await store.subscriptions.subscription(
                accountId: account.id,
                appAppleId: app.appAppleId,
                environment: environment,
                group: group,
                on: db
            )
        else {
            var created = newSubscription(tx, account: account, app: app)
            if let offer {
                created.appliedOffer = apply(offer, to: &tx, storefront: account.storefront, regular: regular)
            }
            created.expiresDate = tx.expiresDate!
            created.renewalPrice = regular.price
            commit(&created, to: tx)
            try await store.upsert(created, on: db)
            return (tx, (.subscribed, .initialBuy), false)
        }

        tx.originalTransactionId = subscription.originalTransactionId
        if let first = try await store.purchases.transaction(id: subscription.originalTransactionId, on: db) {
            tx.originalPurchaseDate = first.originalPurchaseDate
        }

        if !Offers.isActive(subscription) {
            // Resubscribing after expiry or revocation keeps the original transaction id of the group.
            subscription = newSubscription(tx, account: account, app: app, keeping: subscription)
            if let offer {
                subscription.appliedOffer = apply(offer, to: &tx, storefront: account.storefront, regular: regular)
            }
            subscription.expiresDate = tx.expiresDate!
            subscription.renewalPrice = regular.price
            commit(&subscription, to: tx)
            try await store.upsert(subscription, on: db)
            return (tx, (.subscribed, .resubscribe), false)
        }

        guard let latest = try await store.purchases.transaction(id: subscription.lastTransactionId, on: db) else {
            throw PaymentRefusal(
                .inconsistentSubscription,
                "subscription \(subscription.originalTransactionId) has no last transaction"
            )
        }
        if product.productId == subscription.productId {
            // Already subscribed to this product: nothing is charged; a pending change is reverted, and an offer
            // waits for the next renewal.
            var change: (NotificationType, NotificationSubtype?)?
            if subscription.autoRenewProductId != product.productId {
                subscription.autoRenewProductId = product.productId
                change = (.didChangeRenewalPref, nil)
            } else if !subscription.autoRenewStatus {
                subscription.autoRenewStatus = true
                change = (.didChangeRenewalStatus, .autoRenewEnabled)
            }
            if let offer {
                subscription.appliedOffer = pending(offer, storefront: account.storefront, regular: regular)
                change = (.offerRedeemed, nil)
            }
            subscription.updatedAt = now
            try await store.upsert(subscription, on: db)
            return (latest, change, true)
        }

        let current = try await store.appStoreConnect.product(
            appAppleId: app.appAppleId,
            productId: subscription.productId,
            on: db
        )
        let currentPeriod = current?.subscriptionPeriod ?? .oneMonth
        let immediate =
            product.groupLevel < (current?.groupLevel ?? Int.max)
            || (product.groupLevel == current?.groupLevel && period == currentPeriod)
        guard immediate else {
            // Downgrades, and crossgrades to another duration, start at the next renewal, with their offer.
            subscription.autoRenewProductId = product.productId
            subscription.appliedOffer = offer.map { pending($0, storefront: account.storefront, regular: regular) }
            subscription.renewalPrice = regular.price
            subscription.updatedAt = now
            try await store.upsert(subscription, on: db)
            return (latest, (offer == nil ? .didChangeRenewalPref : .offerRedeemed, .downgrade), true)
        }
        // Upgrades, and crossgrades of the same duration, start now; the current period is cancelled. The app account
        // token carries over unless the payment names one.
        tx.appAccountToken = tx.appAccountToken ?? latest.appAccountToken
        var replaced = latest
        replaced.isUpgraded = true
        replaced.revocationDate = now
        replaced.signedSequence = try await store.nextSequence(on: db)
        try await store.update(replaced, on: db)
        subscription.appliedOffer =
            offer.map { apply($0, to: &tx, storefront: account.storefront, regular: regular) }
            ?? nil
        subscription.productId = product.productId
        subscription.autoRenewProductId = product.productId
        subscription.expiresDate = tx.expiresDate!
        subscription.lastTransactionId = tx.transactionId
        subscription.status = AppStoreSubscriptionStatus.active.rawValue
        subscription.billingRetry = false
        subscription.gracePeriodExpiresDate = nil
        subscription.renewalPrice = regular.price
        subscription.updatedAt = now
        try await store.upsert(subscription, on: db)
        return (tx, (offer == nil ? .didChangeRenewalPref : .offerRedeemed, .upgrade), false)
    }

    func newSubscription(
        _ tx: SimTransaction,
        account: SimAccount,
        app: SimApp,
        keeping previous: SimSubscription? = nil
    ) -> SimSubscription {
        SimSubscription(
            originalTransactionId: tx.originalTransactionId,
            accountId: account.id,
            appAppleId: app.appAppleId,
            environment: tx.environment,
            subscriptionGroup: tx.subscriptionGroup ?? tx.productId,
            productId: tx.productId,
            autoRenewProductId: tx.productId,
            autoRenewStatus: true,
            expiresDate: tx.expiresDate!,
            status: AppStoreSubscriptionStatus.active.rawValue,
            renewalCount: 0,
            billingRetry: false,
            gracePeriodExpiresDate: nil,
            retryUntil: nil,
            expirationIntent: nil,
            lastTransactionId: tx.transactionId,
            recentStartDate: tx.purchaseDate,
            updatedAt: tx.purchaseDate
        )
    }

    /// Family Sharing: family members get their own shared copy of a shareable non-consumable or subscription.
    func shareWithFamily(_ tx: SimTransaction, account: SimAccount, product: SimProduct, on db: any SQLDatabase)
        async throws
    {
        guard product.familyShareable, let family = account.familyId,
            product.type == .nonConsumable || product.type == .autoRenewable
        else { return }
        for member in try await store.appStoreConnect.accounts(familyId: family, on: db)
        where member.id != account.id && !member.deleted {
            var shared = tx
            shared.transactionId = try await store.nextTransactionId(tx.environment, on: db)
            shared.originalTransactionId = shared.transactionId
            shared.accountId = member.id
            shared.ownership = .familyShared
            shared.price = 0
            shared.deviceId = nil
            shared.orderId = tx.orderId
            shared.signedSequence = try await store.nextSequence(on: db)
            try await store.insert(shared, on: db)
        }
    }
}
