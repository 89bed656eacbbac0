import Foundation
import HTTPTypes
import Logging
import SQLKit
import ServiceLifecycle
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

/// The subscription engine: renewals, billing retry and grace periods, expiry, auto-renew changes, refunds and
/// revocations, as simulated time passes (`SubscriptionRenewalService` runs it), each with its notification.
public struct SubscriptionEngine: Sendable {
    let configuration: SimulatorConfiguration
    let database: TillDatabase
    let store: SimulatorStore
    let clock: SimulatorClock
    let notifications: NotificationSender
    /// Signalled when a renewal may be due sooner than the loop expected (a purchase, a clock change).
    let due: Wakeup
}

extension SubscriptionEngine {
    /// Moves every subscription whose time has come: renewals, billing failures, grace and retry periods,
    /// expiry. Returns how many subscriptions changed.
    @discardableResult
    public func processDueSubscriptions() async throws -> Int {
        var changed = 0
        while true {
            let due = try await store.subscriptions.dueSubscriptions(
                now: clock.nowMilliseconds,
                limit: 100,
                on: store.sql
            )
            var progressed = 0
            for subscription in due where try await advance(subscription.originalTransactionId) { progressed += 1 }
            changed += progressed
            if due.count < 100 || progressed == 0 { break }
        }
        if changed > 0 { notifications.due.signal() }
        return changed
    }

    /// Brings one subscription up to the current time; returns whether it changed.
    func advance(_ originalTransactionId: String) async throws -> Bool {
        try await database.transaction { db -> Bool in
            guard
                var subscription = try await self.store.subscriptions.subscription(
                    originalTransactionId: originalTransactionId,
                    on: db
                ),
                let app = try await self.store.appStoreConnect.app(appAppleId: subscription.appAppleId, on: db),
                let account = try await self.store.appStoreConnect.account(id: subscription.accountId, on: db)
            else { return false }
            let environment = subscription.environment
            let rate = environment == .production ? RenewalRate.realTime : self.clock.rate
            let now = self.clock.nowMilliseconds
            var changed = false

            // Up to 1,000 periods at once: the clock may have jumped far ahead.
            for _ in 0..<1000 {
                let status = AppStoreSubscriptionStatus(rawValue: subscription.status)
                let paymentWorks = account.paymentFailure == nil && !account.deleted
                if status == .active {
                    guard subscription.expiresDate <= now else { break }
                    let product = try await self.store.appStoreConnect.product(
                        appAppleId: app.appAppleId,
                        productId: subscription.autoRenewProductId,
                        on: db
                    )
                    if subscription.priceIncreaseStatus == 0 {
                        // A price increase that needed consent and did not get it.
                        try await self.expire(&subscription, intent: 3, subtype: .priceIncrease, app: app, on: db)
                    } else if !subscription.autoRenewStatus
                        || (subscription.isCommitted && subscription.commitmentPeriod == 12
                            && subscription.commitmentAutoRenew == false)
                    {
                        // A commitment cancelled during its months ends after its twelfth.
                        try await self.expire(&subscription, intent: 1, subtype: .voluntary, app: app, on: db)
                    } else if product == nil || !product!.reviewState.isSellable(in: environment) {
                        try await self.expire(&subscription, intent: 4, subtype: .productNotForSale, app: app, on: db)
                    } else if environment == .sandbox
                        && subscription.renewalCount >= self.configuration.maximumSandboxRenewals
                    {
                        try await self.expire(&subscription, intent: 1, subtype: .voluntary, app: app, on: db)
                    } else if !paymentWorks {
                        // The charge failed: billing retry, with access kept during the grace period if the app has one.
                        // A commitment plan has no grace period and is retried for 90 days.
                        subscription.billingRetry = true
                        subscription.expirationIntent = 2
                        subscription.retryUntil =
                            subscription.expiresDate
                            + Int64(
                                rate.scale(days: subscription.isCommitted ? 90 : self.configuration.billingRetryDays)
                                    * 1000
                            )
                        if app.gracePeriodDays > 0 && !subscription.isCommitted {
                            subscription.status = AppStoreSubscriptionStatus.gracePeriod.rawValue
                            subscription.gracePeriodExpiresDate =
                                subscription.expiresDate + Int64(rate.scale(days: Double(app.gracePeriodDays)) * 1000)
                        } else {
                            subscription.status = AppStoreSubscriptionStatus.billingRetry.rawValue
                        }
                        subscription.updatedAt = now
                        try await self.store.upsert(subscription, on: db)
                        try await self.notify(
                            subscription,
                            type: .didFailToRenew,
                            subtype: app.gracePeriodDays > 0 && !subscription.isCommitted ? .gracePeriod : nil,
                            app: app,
                            on: db
                        )
                    } else {
                        try await self.renew(
                            &subscription,
                            account: account,
                            app: app,
                            product: product!,
                            from: subscription.expiresDate,
                            recovery: false,
                            on: db
                        )
                    }
                    changed = true
                } else if status == .gracePeriod || status == .billingRetry {
                    if paymentWorks,
                        let product = try await self.store.appStoreConnect.product(
                            appAppleId: app.appAppleId,
                            productId: subscription.autoRenewProductId,
                            on: db
                        )
                    {
                        // The retry succeeded. Within the billing grace period the paid days go on uninterrupted:
                        // the new period starts when the last one ended. In billing retry they were paused: the
                        // new period starts now.
                        try await self.renew(
                            &subscription,
                            account: account,
                            app: app,
                            product: product,
                            from: status == .gracePeriod ? subscription.expiresDate : now,
                            recovery: true,
                            on: db
                        )
                        changed = true
                        continue
                    }
                    if status == .gracePeriod, let graceEnd = subscription.gracePeriodExpiresDate, graceEnd <= now {
                        subscription.status = AppStoreSubscriptionStatus.billingRetry.rawValue
                        subscription.updatedAt = now
                        try await self.store.upsert(subscription, on: db)
                        try await self.notify(subscription, type: .gracePeriodExpired, subtype: nil, app: app, on: db)
                        changed = true
                        continue
                    }
                    if status == .billingRetry, let until = subscription.retryUntil, until <= now {
                        try await self.expire(&subscription, intent: 2, subtype: .billingRetry, app: app, on: db)
                        changed = true
                    }
                    break
                } else {
                    break
                }
            }
            return changed
        }
    }

    /// A renewal transaction for the next period (the period continues from `start`).
    func renew(
        _ subscription: inout SimSubscription,
        account: SimAccount,
        app: SimApp,
        product: SimProduct,
        from start: Int64,
        recovery: Bool,
        on db: any SQLDatabase
    ) async throws {
        let environment = subscription.environment
        guard let previous = try await store.purchases.transaction(id: subscription.lastTransactionId, on: db) else {
            return
        }
        let listed =
            product.prices[account.storefront] ?? StorefrontPrice(price: previous.price, currency: previous.currency)
        // The subscriber keeps the price they subscribed at (or the increase they accepted) until the plan changes.
        let regular =
            product.productId == subscription.productId
            ? StorefrontPrice(price: subscription.renewalPrice ?? listed.price, currency: listed.currency) : listed
        var tx = previous
        tx.transactionId = try await store.nextTransactionId(environment, on: db)
        tx.productId = product.productId
        tx.purchaseDate = start
        tx.expiresDate = clock.expiry(
            of: product.subscriptionPeriod ?? .oneMonth,
            from: start,
            environment: environment
        )
        tx.webOrderLineItemId = try await store.nextWebOrderLineItemId(environment, on: db)
        tx.transactionReason = .renewal
        tx.price = regular.price
        tx.currency = regular.currency
        tx.revocationDate = nil
        tx.revocationReason = nil
        tx.revocationType = nil
        tx.revocationPercentage = nil
        tx.isUpgraded = false
        tx.isTrial = false
        tx.offerType = nil
        tx.offerIdentifier = nil
        tx.offerDiscountType = nil
        tx.offerPeriod = nil
        tx.billingPlanType = product.monthlyCommitmentPrices == nil ? nil : BillingPlanType.billedUpfront.rawValue
        tx.commitmentPeriod = nil
        tx.commitmentExpiresDate = nil
        tx.commitmentPrice = nil
        if subscription.isCommitted, let monthly = product.monthlyCommitmentPrices?[account.storefront] {
            // The next month of the commitment, or the first of a new one after the twelfth.
            let month = (subscription.commitmentPeriod ?? 12) % 12 + 1
            if month == 1 {
                subscription.commitmentExpiresDate = clock.expiry(of: .oneYear, from: start, environment: environment)
            }
            subscription.commitmentPeriod = month
            tx.billingPlanType = BillingPlanType.monthly.rawValue
            tx.commitmentPeriod = month
            tx.commitmentExpiresDate = subscription.commitmentExpiresDate
            tx.commitmentPrice = monthly.price * 12
            tx.price = monthly.price
            tx.currency = monthly.currency
            tx.expiresDate = clock.expiry(of: .oneMonth, from: start, environment: environment)
        } else if var offer = subscription.appliedOffer, offer.remainingRenewals > 0 {
            // The rest of a pay-as-you-go offer, or an offer redeemed during the last period.
            tx.offerType = offer.type
            tx.offerIdentifier = offer.identifier
            tx.offerDiscountType = offer.discountType
            tx.offerPeriod = offer.period
            tx.price = offer.price
            tx.isTrial =
                offer.type == OfferType.introductoryOffer.rawValue
                && offer.discountType == OfferDiscountType.freeTrial.rawValue
            if offer.discountType != OfferDiscountType.payAsYouGo.rawValue,
                let length = offer.period.flatMap(OfferDuration.init)
            {
                let rate = environment == .production ? RenewalRate.realTime : clock.rate
                tx.expiresDate = length.end(from: Date(milliseconds: start), rate: rate).millisecondsSince1970
            }
            offer.remainingRenewals -= 1
            subscription.appliedOffer = offer.remainingRenewals > 0 ? offer : nil
        }
        tx.orderId = makeOrderId()
        tx.deviceId = nil
        tx.finished = true
        tx.signedSequence = try await store.nextSequence(on: db)
        tx.createdAt = clock.nowMilliseconds
        try await store.insert(tx, on: db)
        subscription.productId = product.productId
        subscription.renewalPrice = subscription.isCommitted ? tx.price : regular.price
        subscription.priceIncreaseStatus = nil
        subscription.expiresDate = tx.expiresDate!
        subscription.lastTransactionId = tx.transactionId
        subscription.status = AppStoreSubscriptionStatus.active.rawValue
        subscription.renewalCount += 1
        subscription.billingRetry = false
        subscription.gracePeriodExpiresDate = nil
        subscription.retryUntil = nil
        subscription.expirationIntent = nil
        subscription.updatedAt = clock.nowMilliseconds
        try await store.upsert(subscription, on: db)
        try await notifications.enqueueNotification(
            app: app,
            environment: environment,
            type: .didRenew,
            subtype: recovery ? .billingRecovery : nil,
            transaction: tx,
            on: db
        )
    }

    func expire(
        _ subscription: inout SimSubscription,
        intent: Int,
        subtype: NotificationSubtype?,
        app: SimApp,
        on db: any SQLDatabase
    ) async throws {
        subscription.status = AppStoreSubscriptionStatus.expired.rawValue
        subscription.expirationIntent = intent
        subscription.billingRetry = false
        subscription.gracePeriodExpiresDate = nil
        subscription.autoRenewStatus = intent == 1 ? false : subscription.autoRenewStatus
        subscription.updatedAt = clock.nowMilliseconds
        try await store.upsert(subscription, on: db)
        try await notify(subscription, type: .expired, subtype: subtype, app: app, on: db)
    }

    func notify(
        _ subscription: SimSubscription,
        type: NotificationType,
        subtype: NotificationSubtype?,
        app: SimApp,
        on db: any SQLDatabase
    ) async throws {
        let latest = try await store.purchases.transaction(id: subscription.lastTransactionId, on: db)
        try await notifications.enqueueNotification(
            app: app,
            environment: subscription.environment,
            type: type,
            subtype: subtype,
            transaction: latest,
            on: db
        )
    }

    // MARK: Customer and admin actions

    /// Turns auto-renew on or off (the customer's subscription settings).
    public func setAutoRenew(originalTransactionId: String, enabled: Bool) async throws -> SimSubscription {
        let result = try await database.transaction { db -> SimSubscription in
            guard
                var subscription = try await self.store.subscriptions.subscription(
                    originalTransactionId: originalTransactionId,
                    on: db
                )
            else {
                throw SubscriptionRefusal(.subscriptionNotFound, "no subscription \(originalTransactionId)")
            }
            guard let app = try await self.store.appStoreConnect.app(appAppleId: subscription.appAppleId, on: db) else {
                throw SubscriptionRefusal(.appNotFound, "no app \(String(subscription.appAppleId))")
            }
            // A commitment's months are owed: cancelling stops the next commitment, not the next month.
            let current =
                subscription.isCommitted ? subscription.commitmentAutoRenew ?? true : subscription.autoRenewStatus
            guard current != enabled else { return subscription }
            // `expirationIntent` is the reason a subscription expired: it is set when the period ends without a
            // renewal (EXPIRED/VOLUNTARY), not when the customer turns auto-renew off.
            if subscription.isCommitted {
                subscription.commitmentAutoRenew = enabled
            } else {
                subscription.autoRenewStatus = enabled
            }
            subscription.updatedAt = self.clock.nowMilliseconds
            try await self.store.upsert(subscription, on: db)
            try await self.notify(
                subscription,
                type: .didChangeRenewalStatus,
                subtype: enabled ? .autoRenewEnabled : .autoRenewDisabled,
                app: app,
                on: db
            )
            return subscription
        }
        notifications.due.signal()
        return result
    }

    /// Moves simulated time forward and brings every subscription up to date before returning.
    public func advanceClock(seconds: Double) async throws -> Date {
        let offset = clock.advance(by: seconds)
        try await store.setSetting("clock_offset_ms", String(offset), on: store.sql)
        try await processDueSubscriptions()
        notifications.due.signal()
        return clock.now()
    }

    /// Changes how fast sandbox subscriptions renew (periods already running keep their end).
    public func setRenewalRate(_ rate: RenewalRate) async throws {
        clock.set(rate: rate)
        let encoded = String(decoding: try JSONEncoder().encode(rate), as: UTF8.self)
        try await store.setSetting("renewal_rate", encoded, on: store.sql)
    }
}

/// Renews, retries and expires subscriptions as simulated time passes.
public struct SubscriptionRenewalService: Service {
    let simulator: Simulator

    public init(simulator: Simulator) {
        self.simulator = simulator
    }

    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let seen = simulator.subscriptions.due.current
            do {
                try await simulator.subscriptions.processDueSubscriptions()
                try await simulator.subscriptions.processMassExtensions()
            } catch {
                simulator.logger.warning("subscription renewal failed: \(error)")
            }
            await simulator.subscriptions.due.wait(since: seen, timeout: .milliseconds(500))
        }
    }
}
