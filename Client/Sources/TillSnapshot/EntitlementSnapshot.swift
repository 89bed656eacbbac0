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
