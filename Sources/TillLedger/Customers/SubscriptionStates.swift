import Foundation
import SQLKit
import TillContract
import TillCore
import TillFormats
import TillStorage

extension CustomerSnapshot {
    /// Subscriptions in a billing grace period, and when it ends.
    package static func gracePeriods(_ states: [SubscriptionStateRecord]) -> [SubscriptionKey: Int64] {
        var result: [SubscriptionKey: Int64] = [:]
        for state in states where state.isInBillingRetry {
            guard let end = state.gracePeriodExpiresDate else { continue }
            result[
                SubscriptionKey(environment: state.environment, originalTransactionId: state.originalTransactionId)
            ] =
                end
        }
        return result
    }

    package static func subscriptionViews(_ states: [SubscriptionStateRecord], ledger: [LedgerRecord])
        -> [SubscriptionStateView]
    {
        states.map { state in
            SubscriptionStateView(
                originalTransactionId: state.originalTransactionId,
                environment: state.environment.rawValue,
                productId: state.productId,
                autoRenewProductId: state.autoRenewProductId,
                autoRenewStatus: state.autoRenewStatus,
                status: state.status.map { AppStoreSubscriptionStatus(rawValue: $0).description },
                expiresDate: ledger.filter {
                    $0.environment == state.environment && $0.originalTransactionId == state.originalTransactionId
                        && !$0.isUpgraded
                }.compactMap(\.expiresDate).max(),
                isInBillingRetryPeriod: state.isInBillingRetry,
                gracePeriodExpiresDate: state.gracePeriodExpiresDate,
                expirationIntent: state.expirationIntent,
                renewalDate: state.renewalDate,
                priceIncreaseStatus: state.priceIncreaseStatus,
                billingPlanType: state.billingPlanType,
                commitment: Self.commitmentView(state),
                lastNotificationType: state.lastNotificationType,
                updatedAt: state.updatedAt
            )
        }.sorted {
            ($0.environment, $0.originalTransactionId) < ($1.environment, $1.originalTransactionId)
        }
    }
}

extension CustomerSnapshot {
    /// The commitment of a subscription billed monthly, as its renewal info told it; nil for other plans.
    package static func commitmentView(_ state: SubscriptionStateRecord) -> Components.Schemas.SubscriptionCommitment? {
        guard
            state.commitmentRenewalDate != nil || state.commitmentAutoRenewStatus != nil
                || state.commitmentRenewalPrice != nil || state.commitmentAutoRenewProductId != nil
        else { return nil }
        return Components.Schemas.SubscriptionCommitment(
            renewalDate: state.commitmentRenewalDate,
            autoRenewStatus: state.commitmentAutoRenewStatus,
            autoRenewProductId: state.commitmentAutoRenewProductId,
            renewalBillingPlanType: state.commitmentRenewalBillingPlanType,
            renewalPrice: state.commitmentRenewalPrice,
            currency: state.commitmentRenewalPrice == nil ? nil : state.currency
        )
    }
}

/// One auto-renewable subscription: an original transaction in an environment.
package struct SubscriptionKey: Hashable, Sendable {
    package var environment: AppStoreEnvironment
    package var originalTransactionId: String
}
