import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import SQLKit
import SwiftASN1
import Testing
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillStorage
import TillTestSupport
import X509

@testable import TillServer
@testable import TillSimulator

/// StoreKit Testing in Xcode: purchases made on the simulator's Xcode device, signed by its one self-signed
/// certificate, submitted to the server over its app API, with the certificate registered (or not) through the admin
/// API.
@Suite(.sharingTheMachine)
struct StoreKitTestingTests {
    /// The JSON of a PATCH that sets an app's StoreKit test certificates.
    func certificatesBody(_ texts: [String]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: ["storeKitTestCertificates": texts]), as: UTF8.self)
    }

    func submission(_ jws: String, as customerId: String) -> String {
        #"{"customerId":"\#(customerId)","signedTransaction":"\#(jws)"}"#
    }

    @Test(arguments: TestDatabase.all) func xcodePurchasesAreAcceptedOnlyUnderTheAppsStoreKitTestCertificate(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let simulator = fixture.simulator
            let device = try await fixture.xcodeDevice()
            let bought = try await simulator.payments.addPayment(
                PaymentRequest(deviceId: device.id, bundleId: ServerFixture.bundleId, productId: "pro"),
                environment: .xcode
            )
            let jws = try #require(bought.signedTransaction)
            let xcodePEM = try simulator.signer.xcodeCertificate.serializeAsPEM().pemString
            var serializer = DER.Serializer()
            try serializer.serialize(simulator.signer.xcodeCertificate)
            let xcodeDER = serializer.serializedBytes
            let fingerprint = SHA256.hash(data: xcodeDER).map { String(format: "%02X", $0) }.joined(separator: ":")
            let key = fixture.app.appKey
            let admin = "/admin/v1/apps/\(ServerFixture.bundleId)"

            try await Application(router: buildServerRouter(fixture.server)).test(.router) { client in
                // Without the app's certificate: refused, saying how to accept it, and nothing recorded.
                let refused = try await client.call(.post, "/v1/receipts", json: submission(jws, as: "dev"), token: key)
                #expect(refused.status == 422 && refused.code == "storeKitTestingNotEnabled")
                #expect(refused.message?.contains("storeKitTestCertificates") == true)
                let shown = try await client.call(.get, admin, token: "operator").decode(Components.Schemas.App.self)
                #expect(shown.storeKitTestCertificates.isEmpty)

                // Only a self-signed P-256 certificate is taken.
                for (text, why) in [
                    ("not a certificate", "neither PEM nor"),
                    (try fixture.simulator.signer.jwsAuthority.leaf.serializeAsPEM().pemString, "not self-signed"),
                    (try fixture.simulator.signer.receiptAuthority.root.serializeAsPEM().pemString, "no P-256 key"),
                ] {
                    let bad = try await client.call(
                        .patch,
                        admin,
                        json: try certificatesBody([text]),
                        token: "operator"
                    )
                    #expect(bad.status == 400 && bad.code == "invalidStoreKitTestCertificate")
                    #expect(bad.message?.contains(why) == true, "\(bad.message ?? "")")
                }

                // Registered (as PEM, and again as the base64 of Xcode's DER export: one certificate), shown by its
                // fingerprint.
                let registered = try await client.call(
                    .patch,
                    admin,
                    json: try certificatesBody([xcodePEM, Base64.encode(xcodeDER)]),
                    token: "operator"
                )
                #expect(registered.status == 200)
                let view = try registered.decode(Components.Schemas.App.self).storeKitTestCertificates
                #expect(view.map(\.sha256) == [fingerprint])
                #expect(view.first?.subject.contains("StoreKit Testing in Xcode") == true)

                // Accepted, entitled at once and confirmed without Apple: no App Store knows the purchase.
                let accepted = try await client.call(
                    .post,
                    "/v1/receipts",
                    json: submission(jws, as: "dev"),
                    token: key
                )
                #expect(accepted.status == 200, "\(accepted.object)")
                let result = try accepted.decode(Components.Schemas.SubmissionResult.self)
                #expect(result.submission.state == .confirmed && result.submission.environment == "Xcode")
                #expect(result.submission.attempts == 0 && result.submission.confirmedAt != nil)
                #expect(result.submission.reason?.contains("StoreKit Testing") == true)
                let entitlement = try #require(result.customer.entitlements.first)
                #expect(entitlement.id == "pro" && entitlement.environment == "Xcode" && !entitlement.provisional)
                #expect(result.customer.purchases.map(\.transactionId) == ["1"])

                // Anyone's self-signed key, the same payload: refused.
                let otherKey = P256.Signing.PrivateKey()
                let other = try TestPKI.makeSelfSigned(
                    key: Certificate.PrivateKey(otherKey),
                    commonName: "StoreKit Testing in Xcode",
                    validFrom: Date(timeIntervalSince1970: 1_577_836_800),
                    validUntil: Date(timeIntervalSince1970: 2_208_988_800)
                )
                let impostor = try resigned(
                    jws,
                    by: JWSSigner(key: otherKey, chain: [other], keyId: "Apple_Xcode_Key", type: "JWT"),
                    {
                        $0["transactionId"] = "2"; $0["originalTransactionId"] = "2"
                    }
                )
                let forged = try await client.call(
                    .post,
                    "/v1/receipts",
                    json: submission(impostor, as: "mallory"),
                    token: key
                )
                #expect(forged.status == 422 && forged.code == "invalidChain", "\(forged.object)")

                // Signed by the trusted certificate but labelled Sandbox: Xcode's key never vouches for the sandbox.
                let relabelled = try resigned(jws, by: simulator.signer.xcodeJWS) {
                    $0["environment"] = "Sandbox"; $0["transactionId"] = "3"; $0["originalTransactionId"] = "3"
                }
                let sandboxClaim = try await client.call(
                    .post,
                    "/v1/receipts",
                    json: submission(relabelled, as: "mallory"),
                    token: key
                )
                #expect(
                    sandboxClaim.status == 422 && sandboxClaim.code == "invalidChainLength",
                    "\(sandboxClaim.object)"
                )
                // Labelled Xcode but signed by the sandbox roots (the simulator's App Store chain): only the app's
                // StoreKit test certificates vouch for Xcode data.
                let chained = try resigned(jws, by: simulator.signer.jws) {
                    $0["transactionId"] = "4"; $0["originalTransactionId"] = "4"
                }
                let chainedClaim = try await client.call(
                    .post,
                    "/v1/receipts",
                    json: submission(chained, as: "mallory"),
                    token: key
                )
                #expect(
                    chainedClaim.status == 422 && chainedClaim.code == "untrustedForXcode",
                    "\(chainedClaim.object)"
                )
                // Nor for a notification: Apple sends none of StoreKit Testing's, and the sandbox roots vouch for none.
                let envelope = try simulator.signer.jws.sign(
                    payloadJSON: Array(
                        #"{"notificationType":"TEST","notificationUUID":"8c6a4c6e-0d3c-4f8e-9a55-000000000001","version":"2.0","signedDate":\#(Int64(Date().timeIntervalSince1970 * 1000)),"data":{"bundleId":"com.example.till","environment":"Xcode"}}"#
                            .utf8
                    )
                )
                let notified = try await client.call(
                    .post,
                    "/v1/apple/notifications",
                    json: #"{"signedPayload":"\#(envelope)"}"#
                )
                #expect(notified.status == 401 && notified.message?.contains("untrustedForXcode") == true)
                let customer = try await client.call(.get, "/v1/customers/mallory", token: key)
                #expect((customer.object["purchases"] as? [Any])?.isEmpty == true)

                // LocalTesting (Apple's libraries' unit-testing environment) is StoreKit Testing's too: the same
                // certificate vouches for it, under its own environment.
                let local = try resigned(jws, by: simulator.signer.xcodeJWS) {
                    $0["environment"] = "LocalTesting"; $0["transactionId"] = "5"; $0["originalTransactionId"] = "5"
                }
                let localReply = try await client.call(
                    .post,
                    "/v1/receipts",
                    json: submission(local, as: "dev"),
                    token: key
                )
                let localResult = try localReply.decode(Components.Schemas.SubmissionResult.self)
                #expect(
                    localResult.submission.state == .confirmed && localResult.submission.environment == "LocalTesting"
                )

                // The simulator's sandbox purchases are confirmed with it as before.
                let sandbox = try #require(try await fixture.buy("pro").signedTransaction)
                let confirmed = try await client.call(
                    .post,
                    "/v1/receipts?wait=30",
                    json: submission(sandbox, as: "tester"),
                    token: key
                )
                let sandboxResult = try confirmed.decode(Components.Schemas.SubmissionResult.self)
                #expect(
                    sandboxResult.submission.state == .confirmed && sandboxResult.submission.environment == "Sandbox"
                )
                #expect(sandboxResult.submission.attempts == 1)

                // Removed: refused again.
                let removed = try await client.call(.patch, admin, json: try certificatesBody([]), token: "operator")
                #expect(try removed.decode(Components.Schemas.App.self).storeKitTestCertificates.isEmpty)
                let again = try await client.call(.post, "/v1/receipts", json: submission(jws, as: "dev"), token: key)
                #expect(again.status == 422 && again.code == "storeKitTestingNotEnabled")
            }

            // Kept apart in the ledger and the books, never asked of Apple, never revenue.
            let store = PurchaseStore(database: fixture.server.database)
            let row = try #require(try await store.transaction(environment: .xcode, transactionId: "1", on: store.sql))
            #expect(row.customerId == "dev" && row.confirmed)
            let xcodeSubmission = try #require(
                try await store.sql.raw(
                    "SELECT attempts, state FROM srv_submissions WHERE environment = 'Xcode'"
                ).first()
            )
            #expect(try xcodeSubmission.decode(column: "attempts", as: Int.self) == 0)
            #expect(try xcodeSubmission.decode(column: "state", as: String.self) == "confirmed")
            let books = try await store.sql.raw(
                "SELECT environment, amount FROM srv_finance WHERE transaction_id = '1' AND kind = 'purchase'"
            ).all()
            #expect(try books.map { try $0.decode(column: "environment", as: String.self) } == ["Xcode"])
            let report = try await fixture.server.figures.revenue(
                bundleId: nil,
                from: 0,
                to: Int64.max,
                groupBy: .product
            )
            #expect(report.rows.isEmpty && report.totals.additionalProperties.isEmpty)
        }
    }
}
