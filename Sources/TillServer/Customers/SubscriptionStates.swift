import Foundation
import SQLKit
import TillContract
import TillCore
import TillFormats
import TillStorage

extension Customers {
    /// The renewal states of the subscriptions in a customer's ledger.
    func subscriptionStates(of ledger: [LedgerRecord], bundleId: String, on db: any SQLDatabase) async throws
        -> [SubscriptionStateRecord]
    {
        let subscriptions = Set(
            // Receipts without a catalogue entry carry no type: any purchase with an end may be a subscription.
            ledger.filter { $0.productType == ProductType.autoRenewable.rawValue || $0.expiresDate != nil }.map {
                SubscriptionKey(environment: $0.environment, originalTransactionId: $0.originalTransactionId)
            }
        )
        return try await store.subscriptionStates(
            bundleId: bundleId,
            originalTransactionIds: Array(Set(subscriptions.map(\.originalTransactionId))).sorted(),
            on: db
        ).filter {
            subscriptions.contains(
                SubscriptionKey(environment: $0.environment, originalTransactionId: $0.originalTransactionId)
            )
        }
    }

    /// Subscriptions in a billing grace period, and when it ends.
    static func gracePeriods(_ states: [SubscriptionStateRecord]) -> [SubscriptionKey: Int64] {
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

    static func subscriptionViews(_ states: [SubscriptionStateRecord], ledger: [LedgerRecord])
        -> [SubscriptionStateView]
    {
        states.map { state in
            SubscriptionStateView(
                originalTransactionId: state.originalTransactionId,
                environment: state.environment,
                productId: state.productId,
                autoRenewProductId: state.autoRenewProductId,
                autoRenewStatus: state.autoRenewStatus,
                status: state.status.map { SubscriptionStatus(rawValue: $0).description },
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
        }.sorted { ($0.environment, $0.originalTransactionId) < ($1.environment, $1.originalTransactionId) }
    }
}

extension Customers {
    /// The commitment of a subscription billed monthly, as its renewal info told it; nil for other plans.
    static func commitmentView(_ state: SubscriptionStateRecord) -> Components.Schemas.SubscriptionCommitment? {
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
struct SubscriptionKey: Hashable, Sendable {
    var environment: String
    var originalTransactionId: String
}
