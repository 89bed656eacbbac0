import TillContract
import TillCore

extension CustomerView {
    func writeJSON(to writer: inout JSONWriter) {
        writer.object { w in
            w.field("balances", balances.additionalProperties)
            w.field("customerId", customerId)
            w.key("entitlements")
            w.array(entitlements) { w, entitlement in entitlement.writeJSON(to: &w) }
            w.key("purchases")
            w.array(purchases) { w, purchase in
                w.object { w in
                    w.field("billingPlanType", purchase.billingPlanType)
                    if let commitment = purchase.commitment {
                        w.key("commitment")
                        w.object { w in
                            w.field("billingPeriodNumber", commitment.billingPeriodNumber)
                            w.field("expiresDate", commitment.expiresDate)
                            w.field("totalBillingPeriods", commitment.totalBillingPeriods)
                        }
                    }
                    w.field("confirmed", purchase.confirmed)
                    w.field("environment", purchase.environment)
                    w.field("expiresDate", purchase.expiresDate)
                    w.field("originalTransactionId", purchase.originalTransactionId)
                    w.field("productId", purchase.productId)
                    w.field("productType", purchase.productType?.rawValue)
                    w.field("purchaseDate", purchase.purchaseDate)
                    w.field("quantity", purchase.quantity)
                    w.field("revocationDate", purchase.revocationDate)
                    w.field("revocationDetail", purchase.revocationDetail)
                    w.field("revocationReason", purchase.revocationReason?.rawValue)
                    w.field("transactionId", purchase.transactionId)
                }
            }
            w.key("subscriptions")
            w.array(subscriptions) { w, state in
                w.object { w in
                    w.field("autoRenewProductId", state.autoRenewProductId)
                    w.field("autoRenewStatus", state.autoRenewStatus)
                    w.field("billingPlanType", state.billingPlanType)
                    if let commitment = state.commitment {
                        w.key("commitment")
                        w.object { w in
                            w.field("autoRenewProductId", commitment.autoRenewProductId)
                            w.field("autoRenewStatus", commitment.autoRenewStatus)
                            w.field("currency", commitment.currency)
                            w.field("renewalBillingPlanType", commitment.renewalBillingPlanType)
                            w.field("renewalDate", commitment.renewalDate)
                            w.field("renewalPrice", commitment.renewalPrice)
                        }
                    }
                    w.field("environment", state.environment)
                    w.field("expirationIntent", state.expirationIntent)
                    w.field("expiresDate", state.expiresDate)
                    w.field("gracePeriodExpiresDate", state.gracePeriodExpiresDate)
                    w.field("isInBillingRetryPeriod", state.isInBillingRetryPeriod)
                    w.field("lastNotificationType", state.lastNotificationType)
                    w.field("originalTransactionId", state.originalTransactionId)
                    w.field("priceIncreaseStatus", state.priceIncreaseStatus)
                    w.field("productId", state.productId)
                    w.field("renewalDate", state.renewalDate)
                    w.field("status", state.status)
                    w.field("updatedAt", state.updatedAt)
                }
            }
        }
    }
}

extension Components.Schemas.Entitlement {
    /// One entitlement as the customer's view and an event's customer both write it.
    func writeJSON(to w: inout JSONWriter) {
        w.object { w in
            w.field("environment", environment)
            w.field("expiresDate", expiresDate)
            w.field("id", id)
            w.field("productId", productId)
            w.field("provisional", provisional)
            w.field("transactionId", transactionId)
        }
    }
}
