import TillContract
import TillCore

/// What a Till server says a customer has, at one moment: the payload of the signed snapshot the server hands to
/// apps (`GET /v1/customers/{id}/snapshot`) and that TillClient keeps on disk. It is the contract's
/// `EntitlementSnapshot`; times are UNIX milliseconds.
///
/// The app trusts it only with the server's signature (``SnapshotVerifier``), so that editing the file cannot
/// grant content or credits.
public typealias EntitlementSnapshot = Components.Schemas.EntitlementSnapshot

extension Components.Schemas.EntitlementSnapshot {
    /// What a snapshot promises about one entitlement.
    public typealias Grant = Components.Schemas.SnapshotGrant
    /// One purchase the server recorded for the customer.
    public typealias Purchase = Components.Schemas.SnapshotPurchase

    /// Whether `entitlement` is granted at `now` (an expiring one only until its end).
    public func grants(_ entitlement: String, at now: Int64) -> Bool {
        entitlements.contains { $0.id == entitlement && ($0.expiresDate.map { $0 > now } ?? true) }
    }

    /// The credits of `name` left.
    public func balance(_ name: String) -> Int64 { balances[name] ?? 0 }
}

extension Components.Schemas.EntitlementSnapshot {
    /// The snapshot as `JSONEncoder` with sorted keys writes it (the bytes that are signed).
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { w in
            w.field("balances", balances.additionalProperties)
            w.field("bundleId", bundleId)
            w.field("customerId", customerId)
            w.key("entitlements")
            w.array(entitlements) { w, grant in
                w.object { w in
                    w.field("expiresDate", grant.expiresDate)
                    w.field("id", grant.id)
                    w.field("productId", grant.productId)
                    w.field("provisional", grant.provisional)
                }
            }
            w.field("issuedAt", issuedAt)
            w.field("owner", owner)
            w.key("purchases")
            w.array(purchases) { w, purchase in
                w.object { w in
                    w.field("confirmed", purchase.confirmed)
                    w.field("expiresDate", purchase.expiresDate)
                    w.field("originalTransactionId", purchase.originalTransactionId)
                    w.field("productId", purchase.productId)
                    w.field("productType", purchase.productType?.rawValue)
                    w.field("purchaseDate", purchase.purchaseDate)
                    w.field("quantity", purchase.quantity)
                    w.field("revoked", purchase.revoked)
                    w.field("transactionId", purchase.transactionId)
                }
            }
        }
    }
}
