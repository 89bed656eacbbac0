import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillAppStore
@testable import TillServer
@testable import TillSimulator

extension NotificationTests {
    /// A price increase that needs the customer's consent, then the consent, show on the customer's subscription
    /// (`priceIncreaseStatus`, 0 then 1), in the customer view and in the app API's hand-written body. The simulator
    /// has no price increase to trigger, so the notifications enter after verification, as Apple's renewal info.
    @Test(arguments: TestDatabase.all) func aPriceIncreaseAndTheCustomersConsentShowOnTheSubscription(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let purchase = try await fixture.buy("premium.monthly")
            try await submit(fixture, purchase, as: "pat")
            let original = try #require(purchase.originalTransactionId ?? purchase.transactionId)
            let start = Date()
            func priceIncrease(_ subtype: NotificationSubtype, _ status: PriceIncreaseStatus, after seconds: Double)
                -> VerifiedNotification
            {
                let signed = start.addingTimeInterval(seconds)
                return VerifiedNotification(
                    signedPayload: "",
                    payload: ResponseBodyV2DecodedPayload(
                        notificationType: .priceIncrease,
                        subtype: subtype,
                        signedDate: signed
                    ),
                    uuid: UUID().uuidString.lowercased(),
                    type: .priceIncrease,
                    environment: .sandbox,
                    bundleId: ServerFixture.bundleId,
                    renewal: JWSRenewalInfoDecodedPayload(
                        originalTransactionId: original,
                        autoRenewProductId: "premium.monthly",
                        productId: "premium.monthly",
                        autoRenewStatus: .on,
                        priceIncreaseStatus: status,
                        signedDate: signed,
                        environment: .sandbox,
                        currency: "USD",
                        renewalPrice: 1290
                    )
                )
            }
            func shown() async throws -> Int? {
                try await customer(fixture, "pat").subscriptions.first { $0.originalTransactionId == original }?
                    .priceIncreaseStatus
            }
            #expect(try await shown() == nil)
            let pending = try await fixture.server.notifications.receive(
                priceIncrease(.pending, .notResponded, after: 1),
                app: fixture.app
            )
            #expect(pending.status == .applied)
            #expect(try await shown() == 0, "a price increase waits for the customer's consent")
            _ = try await fixture.server.notifications.receive(
                priceIncrease(.accepted, .consented, after: 2),
                app: fixture.app
            )
            #expect(try await shown() == 1)
            // Older renewal info delivered late does not undo the consent.
            _ = try await fixture.server.notifications.receive(
                priceIncrease(.pending, .notResponded, after: 1.5),
                app: fixture.app
            )
            #expect(try await shown() == 1)
            try await Application(router: buildServerRouter(fixture.server)).test(.router) { client in
                let reply = try await client.call(.get, "/v1/customers/pat", token: fixture.app.appKey)
                let view = try reply.decode(Components.Schemas.Customer.self)
                let state = try #require(view.subscriptions.first)
                #expect(state.priceIncreaseStatus == 1 && state.lastNotificationType == "PRICE_INCREASE")
            }
        }
    }
}
