import Foundation
import HTTPTypes
import Testing
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

extension OfferSigningTests {
    /// A customer of the simulator's App Store of their own: an account, a device, and its app transaction id.
    func newCustomer(_ fixture: ServerFixture) async throws -> (device: String, appTransactionId: String) {
        let account = try await fixture.simulator.appStoreConnect.createAccount(AccountInput(environment: "Sandbox"))
        let device = try await fixture.simulator.appStoreConnect.createDevice(
            accountId: account.id,
            DeviceInput(name: "iPhone")
        )
        let id = Receipts.appTransactionId(accountId: account.id, appAppleId: try #require(fixture.app.appAppleId))
        return (device.id, id)
    }

    @Test(arguments: TestDatabase.all) func introductoryEligibilityIsSignedAsTheLedgerOrTheOperatorSays(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            try await prepare(fixture)
            let bob = try await newCustomer(fixture)
            let carol = try await newCustomer(fixture)
            let key = fixture.app.appKey
            try await withRouter(fixture) { client in
                let ask = { (customer: String, body: String) in
                    try await client.call(
                        .post,
                        "/v1/customers/\(customer)/offers/introductory-eligibility",
                        json: body,
                        token: key
                    )
                }
                // Bob is new: nothing in the ledger to name, so the app names its app transaction.
                let unnamed = try await ask("bob", #"{"productId":"premium.monthly"}"#)
                #expect(unnamed.status == 400 && unnamed.code == "appTransactionIdRequired", "\(unnamed)")
                let first = try await ask(
                    "bob",
                    #"{"productId":"premium.monthly","appTransactionId":"\#(bob.appTransactionId)"}"#
                )
                .decode(Components.Schemas.IntroductoryEligibilitySignature.self)
                #expect(first.allowIntroductoryOffer && first.reason == "neverHadIntroductoryOffer")
                #expect(first.transactionId == bob.appTransactionId && first.subscriptionGroup == "premium")
                let trial = try await pay(fixture, "premium.monthly", device: bob.device, eligibility: first.compactJWS)
                #expect(trial.state == .purchased, "\(trial)")
                let bought = try await simulated(fixture, trial)
                #expect(bought.offerType == 1 && bought.price == 0)
                try await submit(fixture, trial, as: "bob")
                // The ledger keeps that it was an introductory offer: once per group.
                let row = try await PurchaseStore(database: fixture.server.database).transaction(
                    environment: .sandbox,
                    transactionId: try #require(trial.transactionId),
                    on: fixture.server.database.sql
                )
                #expect(row?.introductoryOffer == true)
                let again = try await ask("bob", #"{"productId":"premium.plus"}"#)
                    .decode(Components.Schemas.IntroductoryEligibilitySignature.self)
                #expect(!again.allowIntroductoryOffer && again.reason == "hadIntroductoryOffer")
                #expect(again.transactionId == trial.transactionId, "the ledger's transaction, not the app's word")

                // The operator withholds Carol's: the App Store, which would give a new customer the trial, does not.
                let overridePath = "/admin/v1/apps/\(Self.bundle)/customers/carol/introductory-offers/premium"
                let put = try await client.call(
                    .put,
                    overridePath,
                    json: #"{"allowIntroductoryOffer":false}"#,
                    token: "operator"
                )
                #expect(put.status == 200 && put.object["allowIntroductoryOffer"] as? Bool == false, "\(put)")
                #expect(try await client.call(.get, overridePath, token: "operator").status == 200)
                let withheld = try await ask(
                    "carol",
                    #"{"productId":"premium.monthly","appTransactionId":"\#(carol.appTransactionId)"}"#
                )
                .decode(Components.Schemas.IntroductoryEligibilitySignature.self)
                #expect(!withheld.allowIntroductoryOffer && withheld.reason == "operatorOverride")
                // A JWS edited to say true is refused, whatever it says.
                let parts = withheld.compactJWS.split(separator: ".").map(String.init)
                let payload = try #require(Base64.decode(parts[1], alphabet: .url))
                var claims = try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
                claims["allowIntroductoryOffer"] = true
                let edited =
                    "\(parts[0]).\(Base64.encode(try JSONSerialization.data(withJSONObject: claims), alphabet: .url)).\(parts[2])"
                #expect(
                    refusedSignature(
                        try await pay(fixture, "premium.monthly", device: carol.device, eligibility: edited)
                    )
                )
                let full = try await pay(
                    fixture,
                    "premium.monthly",
                    device: carol.device,
                    eligibility: withheld.compactJWS
                )
                #expect(full.state == .purchased, "\(full)")
                let paid = try await simulated(fixture, full)
                #expect(paid.offerType == nil && paid.price == 990)
                try await submit(fixture, full, as: "carol")

                // Without the override the ledger decides: Carol is subscribed now.
                #expect(try await client.call(.delete, overridePath, token: "operator").status == 204)
                #expect(try await client.call(.get, overridePath, token: "operator").code == "overrideNotFound")
                let ledger = try await ask("carol", #"{"productId":"premium.monthly"}"#)
                    .decode(Components.Schemas.IntroductoryEligibilitySignature.self)
                #expect(!ledger.allowIntroductoryOffer && ledger.reason == "subscribedNow")
                let unknownGroup = try await client.call(
                    .put,
                    "/admin/v1/apps/\(Self.bundle)/customers/carol/introductory-offers/gold",
                    json: #"{"allowIntroductoryOffer":true}"#,
                    token: "operator"
                )
                #expect(unknownGroup.status == 404 && unknownGroup.code == "subscriptionGroupNotFound")
                let gems = try await ask("carol", #"{"productId":"gems.100"}"#)
                #expect(gems.status == 400 && gems.code == "notASubscription")
                let unknown = try await ask("carol", #"{"productId":"premium.gold"}"#)
                #expect(unknown.status == 404 && unknown.code == "productNotFound")
            }
        }
    }

    /// An operator's grant is no App Store's transaction: a signature names Apple's transactions only, so a customer
    /// whose ledger holds nothing but a grant is named by their app transaction, as a new customer is (Apple refuses a
    /// signature naming `grant-…`).
    @Test(arguments: TestDatabase.all) func aGrantIsNeverTheTransactionASignatureNames(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            try await prepare(fixture)
            let dave = try await newCustomer(fixture)
            try await fixture.server.ledger.grant(
                bundleId: Self.bundle,
                customerId: "dave",
                productId: "pro",
                expiresDate: nil,
                environment: .sandbox,
                note: "a goodwill gesture",
                app: fixture.app,
                catalogue: try await fixture.server.catalogue.products(of: Self.bundle)
            )
            let key = fixture.app.appKey
            try await withRouter(fixture) { client in
                let path = "/v1/customers/dave/offers/introductory-eligibility"
                let unnamed = try await client.call(.post, path, json: #"{"productId":"premium.monthly"}"#, token: key)
                #expect(unnamed.status == 400 && unnamed.code == "appTransactionIdRequired", "\(unnamed)")
                let named = try await client.call(
                    .post,
                    path,
                    json: #"{"productId":"premium.monthly","appTransactionId":"\#(dave.appTransactionId)"}"#,
                    token: key
                ).decode(Components.Schemas.IntroductoryEligibilitySignature.self)
                #expect(named.transactionId == dave.appTransactionId && named.allowIntroductoryOffer)
                let trial = try await pay(
                    fixture,
                    "premium.monthly",
                    device: dave.device,
                    eligibility: named.compactJWS
                )
                #expect(trial.state == .purchased, "\(trial)")

                // A grant in the offer's own group is no App Store subscription either: Erin, subscribed by a grant
                // alone, never had Apple's introductory offer, as Apple sees her.
                let erin = try await newCustomer(fixture)
                try await fixture.server.ledger.grant(
                    bundleId: Self.bundle,
                    customerId: "erin",
                    productId: "premium.monthly",
                    expiresDate: fixture.server.clock.milliseconds + 30 * 86_400_000,
                    environment: .sandbox,
                    note: "a month on the house",
                    app: fixture.app,
                    catalogue: try await fixture.server.catalogue.products(of: Self.bundle)
                )
                let granted = try await client.call(
                    .post,
                    "/v1/customers/erin/offers/introductory-eligibility",
                    json: #"{"productId":"premium.monthly","appTransactionId":"\#(erin.appTransactionId)"}"#,
                    token: key
                ).decode(Components.Schemas.IntroductoryEligibilitySignature.self)
                #expect(granted.allowIntroductoryOffer && granted.reason == "neverHadIntroductoryOffer", "\(granted)")

                // The admin's offer routes say an unknown app is unknown, not its product.
                let unknownApp = try await client.call(
                    .get,
                    "/admin/v1/apps/com.example.nope/products/premium.monthly/offers",
                    token: "operator"
                )
                #expect(unknownApp.status == 404 && unknownApp.code == "appNotFound", "\(unknownApp)")
            }
        }
    }
}
