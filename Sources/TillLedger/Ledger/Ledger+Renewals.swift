import Foundation
import SQLKit
import TillContract
import TillCore
import TillFormats
import TillStorage

/// A subscription's renewal state, from the newest renewal info Apple signed: whether it renews and into what, a
/// billing problem and the grace period that keeps access meanwhile, its end, a price increase and the customer's
/// consent. The grace period grants access, so the state is the ledger's to keep; what changed in it is an event.
extension Ledger {
    /// Keeps the renewal state a notification's renewal info reports for `owner`'s subscription (older renewal info
    /// never wins: nothing changes then), and records what changed: auto-renew turned off or on, a billing issue and
    /// its recovery, an expiration, a product change, a price increase and the customer's consent.
    package func recordRenewalState(
        _ state: SubscriptionStateRecord,
        owner: String,
        notificationSubtype: NotificationSubtype?,
        notificationType: NotificationType,
        in changes: ChangeSet
    ) async throws {
        let previous = try await notificationStore.subscriptionState(
            environment: state.environment,
            originalTransactionId: state.originalTransactionId,
            on: changes.db
        )
        guard try await writes.save(state, on: changes.db) else { return }
        let happened = Self.renewalEvents(
            from: previous,
            to: state,
            type: notificationType,
            subtype: notificationSubtype
        )
        guard !happened.isEmpty else { return }
        let periods = try await purchaseStore.transactions(
            environment: state.environment,
            originalTransactionId: state.originalTransactionId,
            on: changes.db
        ).filter { !$0.isUpgraded }
        for (type, effective) in happened {
            var event = PendingEvent(
                type,
                bundleId: state.bundleId,
                customerId: owner,
                occurredAt: state.signedDate,
                environment: state.environment
            )
            event.subscription = Components.Schemas.EventSubscription(
                originalTransactionId: state.originalTransactionId,
                productId: state.productId,
                autoRenewStatus: state.autoRenewStatus,
                autoRenewProductId: state.autoRenewProductId,
                previousProductId: type == .subscription_productChanged ? previous?.autoRenewProductId : nil,
                effective: effective,
                expiresDate: periods.compactMap(\.expiresDate).max(),
                isInBillingRetry: state.isInBillingRetry,
                gracePeriodExpiresDate: state.gracePeriodExpiresDate,
                expirationIntent: state.expirationIntent,
                priceIncreaseStatus: state.priceIncreaseStatus
            )
            changes.record(event)
        }
    }

    /// What changed between two renewal states, as events (with when a product change takes effect).
    package static func renewalEvents(
        from previous: SubscriptionStateRecord?,
        to state: SubscriptionStateRecord,
        type: NotificationType,
        subtype: NotificationSubtype?
    ) -> [(EventType, Components.Schemas.EventSubscription.EffectivePayload?)] {
        var events: [(EventType, Components.Schemas.EventSubscription.EffectivePayload?)] = []
        // A subscription starts renewing: a first state that does not renew is a change already.
        if let renews = state.autoRenewStatus, renews != (previous?.autoRenewStatus ?? true) {
            events.append((renews ? .subscription_autoRenewOn : .subscription_autoRenewOff, nil))
        }
        if let before = previous?.autoRenewProductId, let after = state.autoRenewProductId, before != after {
            events.append((.subscription_productChanged, subtype == .upgrade ? .immediately : .nextRenewal))
        }
        let wasInRetry = previous?.isInBillingRetry ?? false
        let expired = state.status == AppStoreSubscriptionStatus.expired.rawValue || type == .expired
        let wasExpired = previous?.status == AppStoreSubscriptionStatus.expired.rawValue
        if state.isInBillingRetry && !wasInRetry {
            events.append((.subscription_billingIssue, nil))
        } else if wasInRetry && !state.isInBillingRetry && !expired {
            events.append((.subscription_billingRecovered, nil))
        }
        if expired && !wasExpired {
            events.append((.subscription_expired, nil))
        }
        switch (previous?.priceIncreaseStatus, state.priceIncreaseStatus) {
        case (nil, .some):
            events.append((.subscription_priceIncrease, nil))
        case (.some(0), .some(1)):
            events.append((.subscription_priceIncreaseConsented, nil))
        default:
            break
        }
        return events
    }
}
