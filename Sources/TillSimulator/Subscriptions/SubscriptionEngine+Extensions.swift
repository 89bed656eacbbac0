import Foundation
import SQLKit
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

/// Renewal-date extensions: one subscription (Extend a Subscription Renewal Date) or every active subscriber of a
/// product (Extend Subscription Renewal Dates for All Active Subscribers, worked through in the background).
///
/// Apple's rules, kept here: only an active subscription is extended; at most twice in 365 days; by 1 to 90 days;
/// a request identifier makes a request idempotent. Days are scaled by the sandbox's renewal rate, as every
/// duration of the engine is (a grace period, billing retry), so that an extension keeps its proportion to a period.
extension SubscriptionEngine {
    /// Why an extension was not made.
    enum ExtensionRefusal: Error, Sendable, Equatable {
        /// Not an active subscription (expired, revoked, in billing retry or its grace period).
        case ineligible
        /// Already extended twice in the last 365 days.
        case maximumReached
        /// A family member's shared copy: only the purchaser's subscription can be extended.
        case familyShared
        /// No subscription of the app has this original transaction id.
        case notFound
    }

    /// How many extensions a subscription may get in 365 days.
    static let maximumExtensionsPerYear = 2

    /// Extends one subscription, or returns what the same request identifier did before.
    func extendRenewalDate(
        originalTransactionId: String,
        app: SimApp,
        environment: AppStoreEnvironment,
        days: Int,
        reason: Int,
        requestIdentifier: String
    ) async throws -> Result<SimRenewalExtension, ExtensionRefusal> {
        let outcome = try await database.transaction { db -> Result<SimRenewalExtension, ExtensionRefusal> in
            if let earlier = try await self.store.serverAPI.renewalExtension(
                requestIdentifier: requestIdentifier,
                originalTransactionId: originalTransactionId,
                appAppleId: app.appAppleId,
                environment: environment,
                on: db
            ) {
                return earlier.succeeded ? .success(earlier) : .failure(.ineligible)
            }
            guard
                let subscription = try await self.store.subscriptions.subscription(
                    originalTransactionId: originalTransactionId,
                    on: db
                ),
                subscription.appAppleId == app.appAppleId, subscription.environment == environment
            else {
                let shared = try await self.store.purchases.transaction(id: originalTransactionId, on: db)
                if let shared, shared.appAppleId == app.appAppleId, shared.environment == environment,
                    shared.productType == .autoRenewable, shared.ownership == .familyShared
                {
                    return .failure(.familyShared)
                }
                return .failure(.notFound)
            }
            return try await self.extend(
                subscription,
                app: app,
                days: days,
                reason: reason,
                requestIdentifier: requestIdentifier,
                massRequestIdentifier: nil,
                on: db
            )
        }
        notifications.due.signal()
        return outcome
    }

    /// Extends `subscription` if Apple's rules allow it, recording the attempt either way, and sends RENEWAL_EXTENDED
    /// for a success (RENEWAL_EXTENSION / FAILURE for a failure within a mass extension).
    private func extend(
        _ subscription: SimSubscription,
        app: SimApp,
        days: Int,
        reason: Int,
        requestIdentifier: String,
        massRequestIdentifier: String?,
        on db: any SQLDatabase
    ) async throws -> Result<SimRenewalExtension, ExtensionRefusal> {
        var subscription = subscription
        let environment = subscription.environment
        let rate = environment == .production ? RenewalRate.realTime : clock.rate
        let now = clock.nowMilliseconds
        let yearAgo = now - Int64(rate.scale(days: 365) * 1000)
        var record = SimRenewalExtension(
            requestIdentifier: requestIdentifier,
            originalTransactionId: subscription.originalTransactionId,
            appAppleId: app.appAppleId,
            environment: environment,
            massRequestIdentifier: massRequestIdentifier,
            extendByDays: days,
            extendReasonCode: reason,
            succeeded: false,
            webOrderLineItemId: nil,
            effectiveDate: nil,
            createdAt: now
        )
        var refusal: ExtensionRefusal?
        let latest = try await store.purchases.transaction(id: subscription.lastTransactionId, on: db)
        if subscription.status != AppStoreSubscriptionStatus.active.rawValue || subscription.expiresDate <= now
            || latest == nil
        {
            refusal = .ineligible
        } else if try await store.serverAPI.succeededExtensions(
            originalTransactionId: subscription.originalTransactionId,
            since: yearAgo,
            on: db
        ) >= Self.maximumExtensionsPerYear {
            refusal = .maximumReached
        }
        guard refusal == nil, var period = latest else {
            try await store.insert(record, on: db)
            if massRequestIdentifier != nil {
                try await notify(subscription, type: .renewalExtension, subtype: .failure, app: app, on: db)
            }
            return .failure(refusal ?? .ineligible)
        }
        let newExpiry = subscription.expiresDate + Int64(rate.scale(days: Double(days)) * 1000)
        period.expiresDate = newExpiry
        period.signedSequence = try await store.nextSequence(on: db)
        try await store.update(period, on: db)
        subscription.expiresDate = newExpiry
        subscription.updatedAt = now
        try await store.upsert(subscription, on: db)
        record.succeeded = true
        record.webOrderLineItemId = period.webOrderLineItemId
        record.effectiveDate = newExpiry
        try await store.insert(record, on: db)
        try await notify(subscription, type: .renewalExtended, subtype: nil, app: app, on: db)
        return .success(record)
    }

    // MARK: Every active subscriber

    /// Records a mass extension; `processMassExtensions` works through it. Nil when the request identifier was used.
    func requestMassExtension(
        app: SimApp,
        environment: AppStoreEnvironment,
        productId: String,
        storefronts: [String],
        days: Int,
        reason: Int,
        requestIdentifier: String
    ) async throws -> SimMassExtension? {
        let created = try await database.transaction { db -> SimMassExtension? in
            guard
                try await self.store.serverAPI.massExtension(
                    requestIdentifier: requestIdentifier,
                    appAppleId: app.appAppleId,
                    environment: environment,
                    on: db
                ) == nil
            else { return nil }
            let request = SimMassExtension(
                requestIdentifier: requestIdentifier,
                appAppleId: app.appAppleId,
                environment: environment,
                productId: productId,
                storefrontCountryCodes: String(decoding: try JSONEncoder().encode(storefronts), as: UTF8.self),
                extendByDays: days,
                extendReasonCode: reason,
                complete: false,
                completeDate: nil,
                succeededCount: 0,
                failedCount: 0,
                createdAt: self.clock.nowMilliseconds
            )
            try await self.store.insert(request, on: db)
            return request
        }
        due.signal()
        return created
    }

    /// Extends the next subscribers of every mass extension under way, a batch at a time; a request whose
    /// subscribers are all done is completed, with its RENEWAL_EXTENSION / SUMMARY. Returns how many were handled.
    @discardableResult
    func processMassExtensions(batch: Int = 50) async throws -> Int {
        var handled = 0
        for request in try await store.serverAPI.incompleteMassExtensions(on: store.sql) {
            handled += try await database.transaction { db -> Int in
                guard
                    var request = try await self.store.serverAPI.massExtension(
                        requestIdentifier: request.requestIdentifier,
                        appAppleId: request.appAppleId,
                        environment: request.environment,
                        on: db
                    ), !request.complete,
                    let app = try await self.store.appStoreConnect.app(appAppleId: request.appAppleId, on: db)
                else { return 0 }
                let storefronts = Set(request.storefronts)
                let candidates = try await self.store.serverAPI.subscriptionsToExtend(request, limit: batch, on: db)
                for subscription in candidates {
                    let account = try await self.store.appStoreConnect.account(id: subscription.accountId, on: db)
                    guard storefronts.isEmpty || storefronts.contains(account?.storefront ?? "") else {
                        // Outside the request's storefronts: noted as handled, neither extended nor failed.
                        try await self.store.insert(
                            SimRenewalExtension(
                                requestIdentifier: request.requestIdentifier,
                                originalTransactionId: subscription.originalTransactionId,
                                appAppleId: app.appAppleId,
                                environment: request.environment,
                                massRequestIdentifier: request.requestIdentifier,
                                extendByDays: 0,
                                extendReasonCode: request.extendReasonCode,
                                succeeded: false,
                                webOrderLineItemId: nil,
                                effectiveDate: nil,
                                createdAt: self.clock.nowMilliseconds
                            ),
                            on: db
                        )
                        continue
                    }
                    switch try await self.extend(
                        subscription,
                        app: app,
                        days: request.extendByDays,
                        reason: request.extendReasonCode,
                        requestIdentifier: request.requestIdentifier,
                        massRequestIdentifier: request.requestIdentifier,
                        on: db
                    ) {
                    case .success: request.succeededCount += 1
                    case .failure: request.failedCount += 1
                    }
                }
                if candidates.count < batch {
                    request.complete = true
                    request.completeDate = self.clock.nowMilliseconds
                    let environment = request.environment
                    try await self.notifications.enqueueNotification(
                        app: app,
                        environment: environment,
                        type: .renewalExtension,
                        subtype: .summary,
                        summary: NotificationSummary(
                            environment: environment,
                            appAppleId: environment == .production ? app.appAppleId : nil,
                            bundleId: app.bundleId,
                            productId: request.productId,
                            requestIdentifier: request.requestIdentifier,
                            storefrontCountryCodes: request.storefronts.isEmpty ? nil : request.storefronts,
                            succeededCount: Int64(request.succeededCount),
                            failedCount: Int64(request.failedCount)
                        ),
                        on: db
                    )
                }
                try await self.store.update(request, on: db)
                return candidates.count + (request.complete ? 1 : 0)
            }
        }
        if handled > 0 { notifications.due.signal() }
        return handled
    }
}
