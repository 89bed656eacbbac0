import SQLKit
import TillLedger

/// The customers as Apple's side reads them: the view an app gets back after a submission, made from the snapshot
/// read in the submission's own transaction, or read afresh. A seam because customers (their aliases, the catalogue's
/// view of what they own, the cache of their snapshots) belong to the server above this side; `Customers` is the one
/// in use.
package protocol AppStoreCustomers: Sendable {
    /// A customer as apps see it, read afresh (or from the cache of snapshots, when nothing was written since).
    func customer(bundleId: String, customerId: String) async throws -> CustomerView
    /// The view of a snapshot already read.
    func view(of snapshot: CustomerSnapshot, bundleId: String) async throws -> CustomerView
    /// The snapshot of `owner`'s purchases, read on `db` (inside the caller's transaction); `firstSeen` is when the
    /// account was first recorded, read with its alias (`CustomerStore.admit`).
    func snapshot(bundleId: String, owner: String, firstSeen: Int64?, on db: any SQLDatabase) async throws
        -> CustomerSnapshot
}
