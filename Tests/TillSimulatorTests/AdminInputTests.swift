import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import TillCore
import TillFormats
import TillHTTPKit
import TillTestSupport

@testable import TillSimulator

/// What a newcomer following docs/simulator.md met: inputs the simulator took silently, codes that were not
/// tokens, values it never showed. Each is refused with a stable code now, or shown.
@Suite(.sharingTheMachine)
struct AdminInputTests {
    @Test func badInputsAreRefusedWithAStableCode() async throws {
        let fixture = try await SimulatorFixture.make()
        let app = Application(router: buildSimulatorRouter(fixture.simulator))
        let products = "/admin/v1/apps/\(fixture.app.appAppleId)/products"
        try await app.test(.router) { client in
            func refused(_ method: HTTPRequest.Method, _ path: String, _ json: String?) async throws -> (Int, String?) {
                let reply = try await client.call(method, path, json: json)
                return (reply.status, reply.code)
            }
            let cases: [(HTTPRequest.Method, String, String?, Int, String)] = [
                (.post, "\(products)/premium.monthly/offers", #"{"kind":"winBack","offerIdentifier":"w","discountType":"FREE_TRIAL","duration":"P1M","minimumDaysSinceExpiry":10,"maximumDaysSinceExpiry":5}"#, 400, "invalidOffer"),
                (.post, "\(products)/gems.100/offers", #"{"kind":"offerCode","offerIdentifier":"HALF","discountType":"ONE_TIME","price":5000}"#, 400, "invalidOffer"),
                (.post, "\(products)/gems.100/offers", #"{"kind":"offerCode","offerIdentifier":"HALF","discountType":"ONE_TIME","price":490,"currency":"EUR"}"#, 400, "invalidOffer"),
                (.post, "\(products)/premium.monthly/offers", #"{"kind":"promotional","offerIdentifier":"a b/c","discountType":"FREE_TRIAL","duration":"P1W"}"#, 400, "invalidOffer"),
                (.delete, "\(products)/premium.monthly/offers/bogus/x", nil, 404, "offerKindNotFound"),
                (.post, "/admin/v1/accounts", #"{"environment":"Sandbox","storefront":"ZZZ"}"#, 400, "invalidStorefront"),
                (.patch, "/admin/v1/accounts/\(fixture.account.id)", #"{"environment":"Xcode"}"#, 400, "environmentIsFixed"),
                (.post, "/admin/v1/faults", #"{"spec":"sandbox:verifyReceipt:latency=6-3"}"#, 400, "invalidFault"),
                (.post, "/storekit/sandbox/payments", #"{"deviceId":"\#(fixture.phone.id)","bundleId":"com.example.till","productId":"pro","userAction":"bogus"}"#, 400, "invalidUserAction"),
                (.post, "/admin/v1/transactions/1/refund-request", #"{"reason":"BOGUS"}"#, 400, "invalidReason"),
            ]
            for (method, path, json, status, code) in cases {
                let (gotStatus, gotCode) = try await refused(method, path, json)
                #expect(gotStatus == status && gotCode == code, "\(method) \(path) \(json ?? ""): \(gotStatus) \(gotCode ?? "-")")
            }
        }
    }

    @Test func refundsFollowTheirRequestAndTheQueueAndTheOrderAreShown() async throws {
        let fixture = try await SimulatorFixture.make()
        let simulator = fixture.simulator
        let bought = try await fixture.buy("gems.100")
        let id = try #require(bought.transactionId)
        await #expect { try await simulator.subscriptions.declineRefund(transactionId: id) } throws: { $0 is any Refusal }
        try await simulator.subscriptions.requestRefund(transactionId: id, reason: .fulfillmentIssue)
        try await simulator.subscriptions.declineRefund(transactionId: id)
        await #expect { try await simulator.subscriptions.declineRefund(transactionId: id) } throws: { $0 is any Refusal }
        _ = try await simulator.subscriptions.refund(transactionId: id, reason: 0)
        await #expect {
            try await simulator.subscriptions.requestRefund(transactionId: id, reason: .other)
        } throws: { $0 is any Refusal }
        #expect(bought.deliveries == 0)
        _ = try await simulator.payments.queue(deviceId: fixture.phone.id, bundleId: SimulatorFixture.bundleId, environment: .sandbox)
        let again = try await simulator.payments.queue(
            deviceId: fixture.phone.id, bundleId: SimulatorFixture.bundleId, environment: .sandbox
        )
        #expect(again.first?.deliveries == 2)

        let app = Application(router: buildSimulatorRouter(simulator))
        try await app.test(.router) { client in
            let transaction = try await client.call(.get, "/admin/v1/transactions/\(id)")
            #expect(transaction.status == 200 && (transaction.object["orderId"] as? String)?.count == 10)
            #expect(try await client.call(.get, "/admin/v1/transactions/999").code == "transactionNotFound")
        }
        let xcode = try await simulator.appStoreConnect.createAccount(AccountInput(environment: "Xcode"))
        await #expect {
            _ = try await simulator.events.rescindConsent(accountId: xcode.id, bundleId: SimulatorFixture.bundleId)
        } throws: { $0 is any Refusal }
    }

    @Test func anOfferIsGivenOnlyWhereItIsPricedAndAMassRequestIsAUUID() async throws {
        let fixture = try await SimulatorFixture.make()
        let simulator = fixture.simulator
        _ = try await simulator.offers.createOffer(
            appAppleId: fixture.app.appAppleId, productId: "gems.100",
            OfferInput(kind: .offerCode, offerIdentifier: "HALF", discountType: .oneTime, price: 490)
        )
        let codes = try await simulator.offers.generateCodes(
            appAppleId: fixture.app.appAppleId, productId: "gems.100", offerIdentifier: "HALF", count: 1
        )
        _ = try await simulator.appStoreConnect.updateProduct(
            appAppleId: fixture.app.appAppleId, productId: "gems.100",
            ProductInput(prices: ["USA": .init(price: 990, currency: "USD"), "JPN": .init(price: 160_000, currency: "JPY")])
        )
        let japanese = try await simulator.appStoreConnect.createAccount(AccountInput(environment: "Sandbox", storefront: "JPN"))
        let phone = try await simulator.appStoreConnect.createDevice(accountId: japanese.id, DeviceInput(name: "iPhone"))
        do {
            _ = try await simulator.payments.redeemOfferCode(
                codes[0], deviceId: phone.id, bundleId: SimulatorFixture.bundleId, environment: .sandbox
            )
            Issue.record("an offer without a JPN price was given in Japan")
        } catch let error as any Refusal {
            #expect(error.code == "offerNotInStorefront")
        }
        await #expect(throws: ServerAPIFailure.self) {
            _ = try await simulator.serverAPI.extendRenewalDatesForAllActiveSubscribers(
                body: Array(#"{"extendByDays":1,"extendReasonCode":0,"requestIdentifier":"6a4d…","productId":"premium.monthly"}"#.utf8),
                app: fixture.app,
                environment: .sandbox
            )
        }
    }
}
