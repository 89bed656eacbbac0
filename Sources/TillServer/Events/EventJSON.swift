import Foundation
import TillContract
import TillCore

/// An event's body, the contract's `Event`, as `JSONEncoder` with `.sortedKeys` and `.withoutEscapingSlashes` writes
/// it (the feed and the webhooks send the stored bytes as they are), without its cost.
///
/// Hand-written for a measurement: every change writes an event in its own transaction, and Foundation's encoder was
/// 3 to 5% of a purchase's CPU time at 1,000 purchases a second (perf, docs/benchmarks.md). It is the only writer of
/// an event's body; `EventJSONTests` decodes every event type it wrote with the generated type and holds its bytes to
/// the generated encoder's. The rare consumption answer (Apple's consumption information, a dozen optional fields) is
/// written by the generated encoder inside it.
extension Components.Schemas.Event {
    func json() throws -> [UInt8] {
        var writer = JSONWriter(capacity: 1024)
        var failure: (any Error)?
        writer.object { w in
            if let balanceChanges { w.field("balanceChanges", balanceChanges.additionalProperties) }
            w.field("bundleId", bundleId)
            if let consumption {
                w.key("consumption")
                w.object { w in
                    w.field("notificationUUID", consumption.notificationUUID)
                    w.field("reason", consumption.reason)
                    w.key("sent")
                    do {
                        w.verbatim(String(decoding: try Self.encoder.encode(consumption.sent), as: UTF8.self))
                    } catch {
                        failure = error
                        w.verbatim("null")
                    }
                    w.field("transactionId", consumption.transactionId)
                }
            }
            w.field("createdAt", createdAt)
            if let customer {
                w.key("customer")
                w.object { w in
                    w.key("aliases")
                    w.array(customer.aliases) { w, alias in w.string(alias) }
                    w.field("balances", customer.balances.additionalProperties)
                    w.key("entitlements")
                    w.array(customer.entitlements) { w, entitlement in entitlement.writeJSON(to: &w) }
                    w.field("id", customer.id)
                }
            }
            w.field("environment", environment?.rawValue)
            w.field("id", id)
            w.field("occurredAt", occurredAt)
            if let price { Self.write(price, as: "price", to: &w) }
            if let product {
                w.key("product")
                w.object { w in
                    w.key("entitlements")
                    w.array(product.entitlements) { w, entitlement in w.string(entitlement) }
                    w.field("id", product.id)
                    w.field("type", product._type?.rawValue)
                }
            }
            if let refund {
                w.key("refund")
                w.object { w in
                    if let amount = refund.amount { Self.write(amount, as: "amount", to: &w) }
                    w.field("share", refund.share)
                }
            }
            if let rejection {
                w.key("rejection")
                w.object { w in
                    w.field("reason", rejection.reason)
                    w.field("status", rejection.status)
                    w.field("submissionId", rejection.submissionId)
                }
            }
            w.field("sequence", sequence)
            w.key("source")
            w.object { w in
                w.field("id", source.id)
                w.field("kind", source.kind.rawValue)
                w.field("note", source.note)
                w.field("notificationType", source.notificationType)
            }
            if let subscription {
                w.key("subscription")
                w.object { w in
                    w.field("autoRenewProductId", subscription.autoRenewProductId)
                    w.field("autoRenewStatus", subscription.autoRenewStatus)
                    w.field("effective", subscription.effective?.rawValue)
                    w.field("expirationIntent", subscription.expirationIntent)
                    w.field("expiresDate", subscription.expiresDate)
                    w.field("gracePeriodExpiresDate", subscription.gracePeriodExpiresDate)
                    w.field("isInBillingRetry", subscription.isInBillingRetry)
                    w.field("originalTransactionId", subscription.originalTransactionId)
                    w.field("previousExpiresDate", subscription.previousExpiresDate)
                    w.field("previousProductId", subscription.previousProductId)
                    w.field("priceIncreaseStatus", subscription.priceIncreaseStatus)
                    w.field("productId", subscription.productId)
                }
            }
            if let transaction {
                w.key("transaction")
                w.object { w in
                    w.field("confirmed", transaction.confirmed)
                    w.field("expiresDate", transaction.expiresDate)
                    w.field("originalTransactionId", transaction.originalTransactionId)
                    w.field("ownership", transaction.ownership.rawValue)
                    w.field("purchaseDate", transaction.purchaseDate)
                    w.field("quantity", transaction.quantity)
                    w.field("revocationDate", transaction.revocationDate)
                    w.field("revocationReason", transaction.revocationReason?.rawValue)
                    w.field("storefront", transaction.storefront)
                    w.field("transactionId", transaction.transactionId)
                    w.field("webOrderLineItemId", transaction.webOrderLineItemId)
                }
            }
            if let transfer {
                w.key("transfer")
                w.object { w in
                    w.field("fromCustomerId", transfer.fromCustomerId)
                    w.field("reason", transfer.reason.rawValue)
                    w.field("toCustomerId", transfer.toCustomerId)
                    w.key("transactionIds")
                    w.array(transfer.transactionIds) { w, id in w.string(id) }
                }
            }
            w.field("type", _type.rawValue)
        }
        if let failure { throw failure }
        return writer.bytes
    }

    private static func write(_ money: Components.Schemas.Money, as name: String, to w: inout JSONWriter) {
        w.key(name)
        w.object { w in
            w.field("amount", money.amount)
            w.field("currency", money.currency)
        }
    }

    /// The contract's encoding, for the part written by the generated encoder.
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}
