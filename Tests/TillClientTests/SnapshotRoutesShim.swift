import Crypto
import Foundation
import Hummingbird
import TillCore
import TillFormats

@testable import TillServer

/// TEMPORARY, until the `snapshots` branch (the server's own `GET /v1/keys` and
/// `GET /v1/customers/{id}/snapshot`) is merged into main: the two routes as the issue describes them, signed with
/// a key of the test, so that the client's flows can be exercised end to end meanwhile.
enum SnapshotRoutesShim {
    static let signer = SnapshotSigner(key: P256.Signing.PrivateKey())

    static func add(to router: Router<ServerRequestContext>, _ server: PurchaseServer) {
        let group = router.group("v1").add(middleware: AppKeyMiddleware(server: server))
        group.get("keys") { _, context in
            try json(SnapshotKeySet(keys: [signer.publicKey]), context: context)
        }
        group.get("customers/{customer}/snapshot") { _, context in
            let app = try context.requireApp()
            let customerId = try ContentController.pathComponent("customer", context)
            let view = try await server.customer(bundleId: app.bundleId, customerId: customerId)
            let snapshot = EntitlementSnapshot(
                bundleId: app.bundleId,
                customerId: customerId,
                owner: view.customerId,
                issuedAt: Int64(Date().timeIntervalSince1970 * 1000),
                entitlements: view.entitlements.map {
                    .init(id: $0.id, productId: $0.productId, expiresDate: $0.expiresDate, provisional: $0.provisional)
                },
                balances: view.balances,
                purchases: view.purchases.map {
                    .init(
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
            struct Answer: Encodable {
                var signedSnapshot: String
                var snapshot: EntitlementSnapshot
            }
            return try json(Answer(signedSnapshot: try signer.sign(snapshot), snapshot: snapshot), context: context)
        }
    }
}
