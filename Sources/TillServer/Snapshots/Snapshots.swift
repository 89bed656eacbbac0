import Foundation
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillSnapshot

/// A customer's entitlement snapshot, signed (`GET /v1/customers/{customer}/snapshot`): the contract's
/// `SignedSnapshot`. `signedSnapshot` is what an app keeps and checks with ``SnapshotVerifier``; `snapshot` is the
/// same payload in plain JSON, for reading without decoding the JWS. Only the signed form is evidence.
public typealias SignedSnapshot = Components.Schemas.SignedSnapshot

/// Entitlement snapshots: what the server vouches a customer has, signed with the deployment's key, and the keys
/// apps check them with.
public final class Snapshots: Sendable {
    let customers: Customers
    let clock: ServerClock
    /// Signs entitlement snapshots with the deployment's key (see `ServerConfiguration.snapshotSigningKey`).
    let signer: SnapshotSigner
    /// The keys apps check snapshots with (`GET /v1/keys`): the signing key first, then the configured
    /// `snapshotPublishedKeys` (a rotation's next or previous key).
    public let keys: SnapshotKeySet

    init(signer: SnapshotSigner, published: [SnapshotPublicKey], customers: Customers, clock: ServerClock) {
        self.signer = signer
        var keys = [signer.publicKey]
        for key in published where !keys.contains(where: { $0.kid == key.kid }) {
            keys.append(key)
        }
        self.keys = SnapshotKeySet(keys: keys)
        self.customers = customers
        self.clock = clock
    }

    /// What the server vouches `customerId` of `bundleId` has now, signed.
    public func snapshot(bundleId: String, customerId: String) async throws -> SignedSnapshot {
        try signedSnapshot(
            of: try await customers.customer(bundleId: bundleId, customerId: customerId),
            bundleId: bundleId,
            customerId: customerId
        )
    }

    /// The signed snapshot of `customer`, as the app asked for it under `customerId`.
    public func signedSnapshot(of customer: CustomerView, bundleId: String, customerId: String) throws -> SignedSnapshot
    {
        let snapshot = self.snapshot(of: customer, bundleId: bundleId, customerId: customerId)
        return SignedSnapshot(signedSnapshot: try signer.sign(snapshot), snapshot: snapshot)
    }

    /// The payload of `customer`'s snapshot, issued now.
    ///
    /// - Parameter customerId: the id the app asked with; `customer.customerId` is its owner after aliases.
    func snapshot(of customer: CustomerView, bundleId: String, customerId: String) -> EntitlementSnapshot {
        EntitlementSnapshot(
            bundleId: bundleId,
            customerId: customerId,
            owner: customer.customerId,
            issuedAt: clock.milliseconds,
            entitlements: customer.entitlements.map {
                EntitlementSnapshot.Grant(
                    id: $0.id,
                    productId: $0.productId,
                    expiresDate: $0.expiresDate,
                    provisional: $0.provisional
                )
            },
            balances: customer.balances,
            purchases: customer.purchases.map {
                EntitlementSnapshot.Purchase(
                    transactionId: $0.transactionId,
                    originalTransactionId: $0.originalTransactionId,
                    productId: $0.productId,
                    productType: $0.productType,
                    quantity: $0.quantity,
                    purchaseDate: $0.purchaseDate,
                    expiresDate: $0.expiresDate,
                    revoked: $0.revocationDate != nil,
                    confirmed: $0.confirmed
                )
            }
        )
    }
}
