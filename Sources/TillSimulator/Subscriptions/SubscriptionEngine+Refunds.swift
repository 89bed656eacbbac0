import Foundation
import HTTPTypes
import Logging
import SQLKit
import ServiceLifecycle
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

extension SubscriptionEngine {
    /// Refunds a transaction: it is revoked, and a REFUND notification goes out. A refunded subscription
    /// period revokes the subscription. A `percentage` (milliunits, below 100000) makes it a prorated refund
    /// (`REFUND_PRORATED` with its `revocationPercentage`), as Apple grants after consumption information.
    public func refund(transactionId: String, reason: Int, percentage: Int? = nil) async throws -> SimTransaction {
        if let percentage, !(1...100_000).contains(percentage) {
            throw SubscriptionRefusal(.invalidPercentage, "percentage is 1 to 100000 milliunits (100000 = 100 %)")
        }
        let prorated = percentage.map { $0 < 100_000 } ?? false
        return try await revoke(
            transactionId: transactionId,
            reason: reason,
            type: prorated ? "REFUND_PRORATED" : "REFUND_FULL",
            percentage: prorated ? percentage : nil,
            notification: .refund
        )
    }

    /// Apple reverses a refund it granted (a customer's dispute settled): the transaction is no longer revoked,
    /// a refunded subscription period is active again with its renewal date unchanged, and REFUND_REVERSED goes out.
    public func reverseRefund(transactionId: String) async throws -> SimTransaction {
        let result = try await database.transaction { db -> SimTransaction in
            guard var tx = try await self.store.purchases.transaction(id: transactionId, on: db) else {
                throw SubscriptionRefusal(.transactionNotFound, "no transaction \(transactionId)")
            }
            guard tx.revocationDate != nil, tx.revocationType?.hasPrefix("REFUND") == true else {
                throw SubscriptionRefusal(.notRefunded, "transaction \(transactionId) was not refunded")
            }
            let app = try await self.store.requireApp(appAppleId: tx.appAppleId, on: db)
            tx.revocationDate = nil
            tx.revocationReason = nil
            tx.revocationType = nil
            tx.revocationPercentage = nil
            tx.signedSequence = try await self.store.nextSequence(on: db)
            try await self.store.update(tx, on: db)
            if tx.productType == .autoRenewable,
                var subscription = try await self.store.subscriptions.subscription(
                    originalTransactionId: tx.originalTransactionId,
                    on: db
                ),
                subscription.lastTransactionId == tx.transactionId,
                subscription.status == AppStoreSubscriptionStatus.revoked.rawValue
            {
                let running = (tx.expiresDate ?? 0) > self.clock.nowMilliseconds
                subscription.status = (running ? AppStoreSubscriptionStatus.active : .expired).rawValue
                subscription.autoRenewStatus = running
                subscription.updatedAt = self.clock.nowMilliseconds
                try await self.store.upsert(subscription, on: db)
            }
            try await self.notifications.enqueueNotification(
                app: app,
                environment: tx.environment,
                type: .refundReversed,
                subtype: nil,
                transaction: tx,
                on: db
            )
            return tx
        }
        notifications.due.signal()
        return result
    }

    /// Removes a family member's shared copy of a purchase (REVOKE).
    public func revokeFamilyShared(transactionId: String) async throws -> SimTransaction {
        try await revoke(
            transactionId: transactionId,
            reason: 0,
            type: "FAMILY_REVOKE",
            percentage: nil,
            notification: .revoke
        )
    }

    func revoke(
        transactionId: String,
        reason: Int,
        type: String,
        percentage: Int?,
        notification: NotificationType
    ) async throws -> SimTransaction {
        let result = try await database.transaction { db -> SimTransaction in
            guard var tx = try await self.store.purchases.transaction(id: transactionId, on: db) else {
                throw SubscriptionRefusal(.transactionNotFound, "no transaction \(transactionId)")
            }
            guard tx.revocationDate == nil else {
                throw SubscriptionRefusal(.alreadyRevoked, "transaction \(transactionId) is already revoked")
            }
            if type == "FAMILY_REVOKE", tx.ownership != .familyShared {
                throw SubscriptionRefusal(
                    .notFamilyShared,
                    "transaction \(transactionId) is not a family-shared copy"
                )
            }
            guard let app = try await self.store.appStoreConnect.app(appAppleId: tx.appAppleId, on: db) else {
                throw SubscriptionRefusal(.appNotFound, "no app \(String(tx.appAppleId))")
            }
            tx.revocationDate = self.clock.nowMilliseconds
            tx.revocationReason = reason
            tx.revocationType = type
            tx.revocationPercentage = percentage
            tx.signedSequence = try await store.nextSequence(on: db)
            try await self.store.update(tx, on: db)
            if tx.productType == .autoRenewable,
                var subscription = try await self.store.subscriptions.subscription(
                    originalTransactionId: tx.originalTransactionId,
                    on: db
                ),
                subscription.lastTransactionId == tx.transactionId
            {
                subscription.status = AppStoreSubscriptionStatus.revoked.rawValue
                subscription.autoRenewStatus = false
                subscription.updatedAt = self.clock.nowMilliseconds
                try await self.store.upsert(subscription, on: db)
            }
            try await notifications.enqueueNotification(
                app: app,
                environment: tx.environment,
                type: notification,
                subtype: nil,
                transaction: tx,
                on: db
            )
            return tx
        }
        notifications.due.signal()
        return result
    }

    /// The customer asks Apple for a refund of a consumable: Apple asks the developer for consumption data.
    public func requestRefund(transactionId: String, reason: ConsumptionRequestReason) async throws {
        let reasons: [ConsumptionRequestReason] = [
            .unintendedPurchase, .fulfillmentIssue, .unsatisfiedWithPurchase, .legal, .other,
        ]
        guard reasons.contains(reason) else {
            throw SubscriptionRefusal(
                .invalidReason,
                "reason is one of \(reasons.map(\.rawValue).joined(separator: ", "))"
            )
        }
        try await database.transaction { db in
            guard let tx = try await self.store.purchases.transaction(id: transactionId, on: db) else {
                throw SubscriptionRefusal(.transactionNotFound, "no transaction \(transactionId)")
            }
            guard tx.revocationDate == nil else {
                throw SubscriptionRefusal(.alreadyRevoked, "transaction \(transactionId) is already revoked")
            }
            guard let app = try await self.store.appStoreConnect.app(appAppleId: tx.appAppleId, on: db) else {
                throw SubscriptionRefusal(.appNotFound, "no app \(String(tx.appAppleId))")
            }
            try await notifications.enqueueNotification(
                app: app,
                environment: tx.environment,
                type: .consumptionRequest,
                subtype: nil,
                transaction: tx,
                consumptionRequestReason: reason,
                on: db
            )
        }
        notifications.due.signal()
    }

    /// Apple declines a refund request (REFUND_DECLINED): the customer's request must be pending (asked for, not
    /// declined since, the transaction not refunded).
    public func declineRefund(transactionId: String) async throws {
        try await database.transaction { db in
            guard let tx = try await self.store.purchases.transaction(id: transactionId, on: db),
                let app = try await self.store.appStoreConnect.app(appAppleId: tx.appAppleId, on: db)
            else { throw SubscriptionRefusal(.transactionNotFound, "no transaction \(transactionId)") }
            let requested = try await self.store.notifications.latestNotification(
                type: NotificationType.consumptionRequest.rawValue,
                transactionId: transactionId,
                on: db
            )
            let declined = try await self.store.notifications.latestNotification(
                type: NotificationType.refundDeclined.rawValue,
                transactionId: transactionId,
                on: db
            )
            guard let requested, tx.revocationDate == nil,
                (declined?.createdAt).map({ $0 < requested.createdAt }) ?? true
            else {
                throw SubscriptionRefusal(
                    .noRefundRequest,
                    "transaction \(transactionId) has no pending refund request (POST …/refund-request first)"
                )
            }
            try await notifications.enqueueNotification(
                app: app,
                environment: tx.environment,
                type: .refundDeclined,
                subtype: nil,
                transaction: tx,
                on: db
            )
        }
        notifications.due.signal()
    }
}
