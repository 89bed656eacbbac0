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

@testable import TillServer
@testable import TillSimulator

/// `PUT` and `GET /v1/customers/{id}/app-transaction`: the app's AppTransaction, signed by the simulator's App Store
/// (the sandbox roots) or by StoreKit Testing in Xcode, verified, kept one per customer, refused with a stable code.
@Suite(.sharingTheMachine)
struct AppTransactionTests {
    static let bundle = ServerFixture.bundleId

    func path(_ customer: String) -> String { "/v1/customers/\(customer)/app-transaction" }

    func body(_ jws: String) -> String { #"{"signedAppTransaction":"\#(jws)"}"# }

    func withRouter(_ fixture: ServerFixture, _ body: @Sendable (any TestClientProtocol) async throws -> Void)
        async throws
    {
        try await Application(router: buildServerRouter(fixture.server)).test(.router, body)
    }

    /// The device's AppTransaction, as `AppTransaction.shared` gives it on the fixture's sandbox device.
    func deviceAppTransaction(_ fixture: ServerFixture, device: SimDevice? = nil) async throws -> String {
        try await fixture.simulator.payments.signedAppTransaction(
            deviceId: (device ?? fixture.device).id,
            bundleId: Self.bundle,
            environment: .sandbox
        )
    }

    func rows(_ fixture: ServerFixture) async throws -> Int {
        try await fixture.server.database.sql.raw("SELECT COUNT(*) AS n FROM srv_app_transactions").first()?
            .decode(column: "n", as: Int.self) ?? -1
    }

    @Test(arguments: TestDatabase.all) func anAppTransactionIsVerifiedKeptOnceAndReadBack(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            let key = fixture.app.appKey
            let jws = try await deviceAppTransaction(fixture)
            let appTransactionId = Receipts.appTransactionId(
                accountId: fixture.account.id,
                appAppleId: try #require(fixture.app.appAppleId)
            )
            try await withRouter(fixture) { client in
                let none = try await client.call(.get, path("alice"), token: key)
                #expect(none.status == 404 && none.code == "appTransactionNotFound", "\(none.object)")
                // A new customer with no purchase: the server has nothing to name in an eligibility signature yet.
                let unnamed = try await client.call(
                    .post,
                    "/v1/customers/alice/offers/introductory-eligibility",
                    json: #"{"productId":"premium.monthly"}"#,
                    token: key
                )
                #expect(unnamed.status == 400 && unnamed.code == "appTransactionIdRequired")

                let first = try await client.call(.put, path("alice"), json: body(jws), token: key)
                #expect(first.status == 200, "\(first.object)")
                let stored = try first.decode(Components.Schemas.AppTransaction.self)
                #expect(stored.customerId == "alice" && stored.bundleId == Self.bundle)
                #expect(stored.environment == .sandbox && stored.appAppleId == nil)
                #expect(stored.appTransactionId == appTransactionId)
                #expect(stored.originalApplicationVersion == "1.0" && stored.applicationVersion == "1")
                #expect(stored.originalPurchaseDate == fixture.account.createdAt && stored.originalPlatform == "iOS")
                #expect(stored.deviceVerification?.count == 64 && stored.deviceVerificationNonce != nil)
                #expect(stored.receiptCreationDate != nil && stored.preorderDate == nil)
                #expect(stored.signedAppTransaction == jws)

                // Sent again (a retry whose answer was lost): the same answer, still one row.
                let again = try await client.call(.put, path("alice"), json: body(jws), token: key)
                #expect(again.status == 200)
                #expect(try again.decode(Components.Schemas.AppTransaction.self) == stored)
                let read = try await client.call(.get, path("alice"), token: key)
                #expect(read.status == 200)
                #expect(try read.decode(Components.Schemas.AppTransaction.self) == stored)
                #expect(try await rows(fixture) == 1)

                // Its id now names the customer in an introductory-offer eligibility signature.
                let named = try await client.call(
                    .post,
                    "/v1/customers/alice/offers/introductory-eligibility",
                    json: #"{"productId":"premium.monthly"}"#,
                    token: key
                )
                #expect(named.status == 200, "\(named.object)")
                let signature = try named.decode(Components.Schemas.IntroductoryEligibilitySignature.self)
                #expect(signature.transactionId == appTransactionId && signature.allowIntroductoryOffer)

                // Nothing about access or money changed: no purchase, no event.
                let customer = try await fixture.server.customers.customer(bundleId: Self.bundle, customerId: "alice")
                #expect(customer.purchases.isEmpty && customer.entitlements.isEmpty)
                let events = try await client.call(.get, "/admin/v1/events?bundleId=\(Self.bundle)", token: "operator")
                #expect((events.object["items"] as? [Any])?.isEmpty == true, "\(events.object)")

                // A guest linked to the account reads and writes the account's.
                let linked = try await client.call(
                    .post,
                    "/v1/customers/alice/aliases",
                    json: #"{"customerId":"alice-phone"}"#,
                    token: key
                )
                #expect(linked.status == 200)
                let viaGuest = try await client.call(.get, path("alice-phone"), token: key)
                #expect(try viaGuest.decode(Components.Schemas.AppTransaction.self) == stored)
                let putViaGuest = try await client.call(.put, path("alice-phone"), json: body(jws), token: key)
                #expect(try putViaGuest.decode(Components.Schemas.AppTransaction.self).customerId == "alice")
                #expect(try await rows(fixture) == 1)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func aNewerAppTransactionReplacesTheKeptOneAndAnOlderOneDoesNot(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let key = fixture.app.appKey
            let signer = fixture.simulator.signer.jws
            let device = try await deviceAppTransaction(fixture)
            let signedAt = { (jws: String) throws -> Int64 in
                let payload = try #require(Base64.decode(jws.split(separator: ".")[1], alphabet: .url))
                let object = try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
                return try #require((object["receiptCreationDate"] as? NSNumber)?.int64Value)
            }
            let base = try signedAt(device)
            // The same account's AppTransaction signed a minute later (a second device, a reinstall), and an hour
            // earlier (a device that was offline sends the one it kept).
            let later = try resigned(device, by: signer) { $0["receiptCreationDate"] = base + 60_000 }
            let earlier = try resigned(device, by: signer) { $0["receiptCreationDate"] = base - 3_600_000 }
            try await withRouter(fixture) { client in
                let put = { (jws: String) in
                    let reply = try await client.call(.put, path("bob"), json: body(jws), token: key)
                    #expect(reply.status == 200, "\(reply.object)")
                    return try reply.decode(Components.Schemas.AppTransaction.self)
                }
                #expect(try await put(device).signedAppTransaction == device)
                let replaced = try await put(later)
                #expect(replaced.signedAppTransaction == later && replaced.receiptCreationDate == base + 60_000)
                // Older than the one kept: answered with the kept one, which stays.
                let kept = try await put(earlier)
                #expect(kept == replaced)
                #expect(try await put(device) == replaced)
                let read = try await client.call(.get, path("bob"), token: key)
                #expect(try read.decode(Components.Schemas.AppTransaction.self) == replaced)
                #expect(try await rows(fixture) == 1)

                // Another Apple Account on the device, signed later still: the customer's AppTransaction is now that
                // account's.
                let account = try await fixture.simulator.appStoreConnect.createAccount(
                    AccountInput(environment: "Sandbox")
                )
                let other = try await fixture.simulator.appStoreConnect.createDevice(
                    accountId: account.id,
                    DeviceInput(name: "iPad")
                )
                let otherJWS = try resigned(try await deviceAppTransaction(fixture, device: other), by: signer) {
                    $0["receiptCreationDate"] = base + 120_000
                }
                let switched = try await put(otherJWS)
                #expect(
                    switched.appTransactionId
                        == Receipts.appTransactionId(
                            accountId: account.id,
                            appAppleId: try #require(fixture.app.appAppleId)
                        )
                )
                #expect(switched.appTransactionId != replaced.appTransactionId)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func refusalsHaveAStableCodeAndStoreNothing(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            let key = fixture.app.appKey
            let simulator = fixture.simulator
            let jws = try await deviceAppTransaction(fixture)
            // Another app of the same App Store: signed properly, for another bundle id.
            let otherApp = try await simulator.appStoreConnect.createApp(
                AppInput(appAppleId: 1_234_567_891, bundleId: "com.example.other", sharedSecret: "s3cret")
            )
            let otherAppJWS = try await simulator.payments.signedAppTransaction(
                deviceId: fixture.device.id,
                bundleId: otherApp.bundleId,
                environment: .sandbox
            )
            // The payload changed after signing: the signature no longer matches.
            let segments = jws.split(separator: ".").map(String.init)
            let payloadBytes = try #require(Base64.decode(segments[1], alphabet: .url))
            var payload = try #require(try JSONSerialization.jsonObject(with: Data(payloadBytes)) as? [String: Any])
            payload["originalApplicationVersion"] = "0.1"
            let tampered = [
                segments[0], Base64.encode(try JSONSerialization.data(withJSONObject: payload), alphabet: .url),
                segments[2],
            ].joined(separator: ".")
            // A signed transaction is not an AppTransaction: it has no receiptType.
            let bought = try await fixture.buy("pro")
            let transaction = try #require(bought.signedTransaction)
            // Production data under the sandbox roots: only Apple vouches for production.
            let production = try resigned(jws, by: simulator.signer.jws) { $0["receiptType"] = "Production" }

            try await withRouter(fixture) { client in
                for (sent, status, code) in [
                    (body(otherAppJWS), 422, "invalidAppIdentifier"),
                    (body(tampered), 422, "verificationFailure"),
                    (body("not-a-jws"), 422, "invalidFormat"),
                    (body("a.b.c"), 422, "invalidFormat"),
                    (body(transaction), 422, "malformedPayload"),
                    (body(production), 422, "untrustedForProduction"),
                    ("{}", 400, "invalidBody"),
                    (#"{"signedAppTransaction":42}"#, 400, "invalidBody"),
                    ("not json", 400, "invalidBody"),
                ] {
                    let reply = try await client.call(.put, path("carol"), json: sent, token: key)
                    #expect(reply.status == status && reply.code == code, "\(code): \(reply.object)")
                    #expect(reply.message?.isEmpty == false)
                }
                let anonymous = try await client.call(.put, path("carol"), json: body(jws), token: nil)
                #expect(anonymous.status == 401 && anonymous.code == "unauthorized")
                let blank = try await client.call(.put, path("%20"), json: body(jws), token: key)
                #expect(blank.status == 400 && blank.code == "invalidCustomerId")

                // An app that takes no sandbox data takes no sandbox AppTransaction either.
                let off = try await client.call(
                    .patch,
                    "/admin/v1/apps/\(Self.bundle)",
                    json: #"{"acceptSandbox":false}"#,
                    token: "operator"
                )
                #expect(off.status == 200)
                let sandbox = try await client.call(.put, path("carol"), json: body(jws), token: key)
                #expect(sandbox.status == 422 && sandbox.code == "sandboxNotAccepted", "\(sandbox.object)")

                let none = try await client.call(.get, path("carol"), token: key)
                #expect(none.status == 404 && none.code == "appTransactionNotFound")
                #expect(try await rows(fixture) == 0)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func xcodeAppTransactionsNeedTheAppsStoreKitTestCertificate(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let simulator = fixture.simulator
            let device = try await fixture.xcodeDevice()
            let jws = try await simulator.payments.signedAppTransaction(
                deviceId: device.id,
                bundleId: Self.bundle,
                environment: .xcode
            )
            let pem = try simulator.signer.xcodeCertificate.serializeAsPEM().pemString
            let key = fixture.app.appKey
            try await withRouter(fixture) { client in
                let refused = try await client.call(.put, path("dev"), json: body(jws), token: key)
                #expect(refused.status == 422 && refused.code == "storeKitTestingNotEnabled", "\(refused.object)")
                let registered = try await client.call(
                    .patch,
                    "/admin/v1/apps/\(Self.bundle)",
                    json: String(
                        decoding: try JSONSerialization.data(withJSONObject: ["storeKitTestCertificates": [pem]]),
                        as: UTF8.self
                    ),
                    token: "operator"
                )
                #expect(registered.status == 200)
                let accepted = try await client.call(.put, path("dev"), json: body(jws), token: key)
                #expect(accepted.status == 200, "\(accepted.object)")
                let stored = try accepted.decode(Components.Schemas.AppTransaction.self)
                #expect(stored.environment == .xcode && stored.signedAppTransaction == jws)
                // Xcode's certificate vouches for Xcode data only: the same payload labelled Sandbox is refused.
                let relabelled = try resigned(jws, by: simulator.signer.xcodeJWS) { $0["receiptType"] = "Sandbox" }
                let sandbox = try await client.call(.put, path("dev"), json: body(relabelled), token: key)
                #expect(sandbox.status == 422 && sandbox.code == "invalidChainLength", "\(sandbox.object)")
                // A sandbox AppTransaction signed later replaces an Xcode one (an older one would not).
                let created = try #require(stored.receiptCreationDate)
                let sandboxLater = try resigned(try await deviceAppTransaction(fixture), by: simulator.signer.jws) {
                    $0["receiptCreationDate"] = created + 1_000
                }
                let sandboxEarlier = try resigned(sandboxLater, by: simulator.signer.jws) {
                    $0["receiptCreationDate"] = created - 1_000
                }
                let notReplaced = try await client.call(.put, path("dev"), json: body(sandboxEarlier), token: key)
                #expect(try notReplaced.decode(Components.Schemas.AppTransaction.self) == stored)
                let replaced = try await client.call(.put, path("dev"), json: body(sandboxLater), token: key)
                #expect(try replaced.decode(Components.Schemas.AppTransaction.self).environment == .sandbox)
            }
        }
    }

    /// Production data is reached only with Apple's own signature, so the rule that keeps it is held here directly:
    /// only production replaces production, production replaces anything, and otherwise the later signing wins.
    @Test func whichAppTransactionIsKept() {
        func record(_ environment: Components.Schemas.Environment, signedAt: Int64?, _ jws: String)
            -> AppTransactionRecord
        {
            AppTransactionRecord(
                AppTransaction(receiptCreationDate: signedAt.map { Date(timeIntervalSince1970: Double($0) / 1000) }),
                environment: environment,
                jws: jws,
                bundleId: "b",
                customerId: "c",
                at: 0
            )
        }
        let production = record(.production, signedAt: 1_000, "p1")
        #expect(!production.isReplaced(by: record(.sandbox, signedAt: 9_000, "s1")))
        #expect(!production.isReplaced(by: record(.xcode, signedAt: 9_000, "x1")))
        #expect(production.isReplaced(by: record(.production, signedAt: 2_000, "p2")))
        #expect(!production.isReplaced(by: record(.production, signedAt: 1_000, "p3")), "a tie keeps the one kept")
        #expect(!production.isReplaced(by: record(.production, signedAt: 500, "p4")))
        #expect(!production.isReplaced(by: production), "the same JWS again")
        let sandbox = record(.sandbox, signedAt: 5_000, "s2")
        #expect(sandbox.isReplaced(by: record(.production, signedAt: 1, "p5")))
        #expect(sandbox.isReplaced(by: record(.xcode, signedAt: 6_000, "x2")))
        #expect(!sandbox.isReplaced(by: record(.xcode, signedAt: 4_000, "x3")))
        #expect(sandbox.isReplaced(by: record(.sandbox, signedAt: 5_001, "s3")))
        #expect(!record(.sandbox, signedAt: 1, "s4").isReplaced(by: record(.sandbox, signedAt: nil, "s5")))
        #expect(record(.sandbox, signedAt: nil, "s6").isReplaced(by: record(.sandbox, signedAt: 1, "s7")))
    }
}
