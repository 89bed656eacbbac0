import Foundation
import Testing
import TillAppStore
import TillCatalogue
import TillContract
import TillCore
import TillDevelopment
import TillFormats
import TillLedger
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// Every event type, made by the story that makes it (purchases, Apple's confirmation and rejection, its
/// notifications, the app's debits and links, an operator's changes, a consumption answer), delivered to a receiver,
/// checked by the Standard Webhooks library and against the contract's schema, and in order for each customer.
extension WebhookTests {
    /// What an event of each type must carry beside its id, type, time, app and source (docs/events.md).
    static func missingSections(_ event: Event) -> [String] {
        var required: [(String, Bool)] = []
        let subscription = ("subscription", event.subscription != nil)
        let customer = ("customer", event.customer != nil)
        let purchase = [
            ("product", event.product != nil), ("transaction", event.transaction != nil),
            ("environment", event.environment != nil),
        ]
        switch event._type {
        case .purchase_initial, .purchase_nonRenewing, .purchase_confirmed, .access_granted:
            required = [customer] + purchase
        case .subscription_renewed, .subscription_extended:
            required = [customer, subscription] + purchase
        case .credits_purchased, .purchase_refundReversed:
            required =
                [customer, ("balanceChanges", event.balanceChanges != nil || event.product?._type != .consumable)]
                + purchase
        case .credits_debited, .credits_adjusted:
            required = [customer, ("balanceChanges", event.balanceChanges != nil)]
        case .subscription_autoRenewOff, .subscription_autoRenewOn, .subscription_billingIssue,
            .subscription_billingRecovered, .subscription_expired, .subscription_priceIncrease,
            .subscription_priceIncreaseConsented:
            required = [customer, subscription]
        case .subscription_productChanged:
            required = [
                customer, subscription, ("previousProductId", event.subscription?.previousProductId != nil),
                ("effective", event.subscription?.effective != nil),
            ]
        case .purchase_refunded:
            required = [customer, ("refund", event.refund != nil)] + purchase
        case .purchase_rejected:
            required = [customer, ("rejection", event.rejection != nil)] + purchase
        case .access_revoked:
            required = [customer] + purchase
        case .customer_transferred:
            required = [customer, ("transfer", event.transfer != nil)]
        case .consumption_answerSent:
            required = [("consumption", event.consumption != nil)]
        }
        return required.filter { !$0.1 }.map(\.0)
    }

    @Test(
        .enabled(
            if: Prerequisite.standardWebhooks.shouldRun,
            Comment(rawValue: Prerequisite.standardWebhooks.skipMessage)
        ),
        .timeLimit(.minutes(10)),
        arguments: TestDatabase.all
    )
    func everyEventTypeReachesAReceiverSignedAndShapedAsTheContractSays(_ database: TestDatabase) async throws {
        try await ServerFixture.run(database: database, followSimulatorClock: true, configure: Self.loopback) {
            fixture in
            let notifications = NotificationTests()
            let server = fixture.server
            let bundle = ServerFixture.bundleId
            let appAppleId = try #require(fixture.app.appAppleId)
            let simulator = fixture.simulator
            // An upgrade in the premium group.
            _ = try await simulator.appStoreConnect.createProduct(
                appAppleId: appAppleId,
                ProductInput(
                    productId: "premium.plus",
                    type: .autoRenewable,
                    subscriptionGroup: "premium",
                    subscriptionPeriod: .oneMonth,
                    groupLevel: 1,
                    price: 1990
                )
            )
            _ = try await server.catalogue.putProduct(
                bundleId: bundle,
                productId: "premium.plus",
                CatalogProductInput(
                    type: .autoRenewable,
                    entitlements: ["premium", "plus"],
                    subscriptionGroup: "premium"
                )
            )
            try await Self.withWebhooks(fixture) { receiver, endpoint in
                // A receipt Apple rejects: its account is gone (before notifications are wired: no notification of
                // Apple's vouches for the purchase).
                let mallory = try await simulator.appStoreConnect.createAccount(AccountInput(environment: "Sandbox"))
                let device = try await simulator.appStoreConnect.createDevice(accountId: mallory.id, DeviceInput())
                _ = try await simulator.payments.addPayment(
                    PaymentRequest(deviceId: device.id, bundleId: bundle, productId: "gems.100"),
                    environment: .sandbox
                )
                let receipt = Base64.encode(
                    try await simulator.payments.appReceipt(
                        deviceId: device.id,
                        bundleId: bundle,
                        environment: .sandbox
                    )
                )
                try await simulator.appStoreConnect.deleteAccount(id: mallory.id)
                let rejected = try await server.intake.submit(
                    SubmissionRequest(customerId: "mallory", receipt: receipt),
                    app: fixture.app
                )
                #expect(try await fixture.settled(rejected).state == .rejected)

                try await notifications.withNotifications(fixture, gracePeriodDays: 16) {
                    // Purchases of every kind, each confirmed by Apple.
                    let pro = try await fixture.buy("pro")
                    try await notifications.submit(fixture, pro, as: "alice")
                    let gems = try await fixture.buy("gems.100")
                    try await notifications.submit(fixture, gems, as: "alice")
                    try await notifications.submit(fixture, try await fixture.buy("issue.1"), as: "alice")
                    // The app spends; an operator adds, grants and takes back.
                    _ = try await server.ledger.debit(
                        bundleId: bundle,
                        customerId: "alice",
                        credit: "gems",
                        amount: 10,
                        requestId: "order-1"
                    )
                    _ = try await server.ledger.adjustBalance(
                        bundleId: bundle,
                        customerId: "alice",
                        credit: "gems",
                        delta: 5,
                        requestId: "goodwill-1",
                        note: "sorry for the wait"
                    )
                    let catalogue = try await server.catalogue.products(of: bundle)
                    try await server.ledger.grant(
                        bundleId: bundle,
                        customerId: "bob",
                        productId: "pro",
                        expiresDate: nil,
                        note: "beta tester",
                        app: fixture.app,
                        catalogue: catalogue
                    )
                    let grant = try #require(
                        try await server.customers.customer(bundleId: bundle, customerId: "bob").purchases.first
                    )
                    try await server.ledger.revoke(
                        bundleId: bundle,
                        customerId: "bob",
                        transactionId: grant.transactionId,
                        environment: nil,
                        note: "the beta ended",
                        catalogue: catalogue
                    )
                    // A guest's purchase, moved to the account it is linked to.
                    try await notifications.submit(fixture, try await fixture.buy("gems.100"), as: "guest-1")
                    _ = try await server.customers.link(bundleId: bundle, guestId: "guest-1", to: "alice")

                    // A subscription's life, told by Apple's notifications.
                    let monthly = try await fixture.buy("premium.monthly")
                    try await notifications.submit(fixture, monthly, as: "alice")
                    let original = try #require(monthly.originalTransactionId ?? monthly.transactionId)
                    let subscriptions = simulator.subscriptions
                    _ = try await subscriptions.setAutoRenew(originalTransactionId: original, enabled: false)
                    _ = try await notifications.delivered(.didChangeRenewalStatus, .autoRenewDisabled, fixture)
                    _ = try await subscriptions.setAutoRenew(originalTransactionId: original, enabled: true)
                    _ = try await notifications.delivered(.didChangeRenewalStatus, .autoRenewEnabled, fixture)
                    _ = try await subscriptions.increasePrice(
                        appAppleId: appAppleId,
                        productId: "premium.monthly",
                        PriceIncreaseInput(price: 9990)
                    )
                    _ = try await notifications.delivered(.priceIncrease, .pending, fixture)
                    _ = try await subscriptions.respondToPriceIncrease(originalTransactionId: original, accept: true)
                    _ = try await notifications.delivered(.priceIncrease, .accepted, fixture)
                    let simApp = try #require(try await simulator.store.appStoreConnect.app(bundleId: bundle, on: simulator.store.sql))
                    _ = try await subscriptions.extendRenewalDate(
                        originalTransactionId: original,
                        app: simApp,
                        environment: .sandbox,
                        days: 30,
                        reason: 3,
                        requestIdentifier: "outage"
                    )
                    _ = try await notifications.delivered(.renewalExtended, nil, fixture)
                    // The month and its extension end: a renewal. The next one cannot be billed, then can.
                    _ = try await subscriptions.advanceClock(seconds: 601)
                    _ = try await notifications.delivered(.didRenew, nil, fixture)
                    _ = try await simulator.appStoreConnect.updateAccount(
                        id: fixture.account.id,
                        AccountInput(paymentFailure: 0)
                    )
                    _ = try await subscriptions.advanceClock(seconds: 301)
                    _ = try await notifications.delivered(.didFailToRenew, .gracePeriod, fixture)
                    _ = try await simulator.appStoreConnect.updateAccount(
                        id: fixture.account.id,
                        AccountInput(paymentFailure: -1)
                    )
                    _ = try await subscriptions.advanceClock(seconds: 1)
                    _ = try await notifications.delivered(.didRenew, .billingRecovery, fixture)
                    // An upgrade, at once; then auto-renew off, and the subscription ends.
                    _ = try await fixture.buy("premium.plus")
                    _ = try await notifications.delivered(.didChangeRenewalPref, .upgrade, fixture)
                    _ = try await subscriptions.setAutoRenew(originalTransactionId: original, enabled: false)
                    _ = try await subscriptions.advanceClock(seconds: 301)
                    _ = try await notifications.delivered(.expired, .voluntary, fixture)

                    // Half of a purchase refunded, then the refund reversed.
                    let proId = try #require(pro.transactionId)
                    _ = try await subscriptions.refund(transactionId: proId, reason: 0, percentage: 50_000)
                    _ = try await notifications.delivered(.refund, nil, fixture)
                    _ = try await subscriptions.reverseRefund(transactionId: proId)
                    _ = try await notifications.delivered(.refundReversed, nil, fixture)
                    // A refund request, answered for a customer who consented.
                    _ = try await server.consumption.setConsent(bundleId: bundle, customerId: "alice", consented: true)
                    try await subscriptions.requestRefund(
                        transactionId: try #require(gems.transactionId),
                        reason: .unintendedPurchase
                    )
                    try await waitUntil {
                        try await server.consumption.requests(bundleId: bundle, state: .sent).total == 1
                    }
                }
                // Every type reached the receiver.
                let all = Set(EventType.allCases)
                do {
                    try await waitUntil(timeout: .seconds(60)) {
                        let recorded = try await Self.events(server).count
                        return Set(try Self.received(receiver).map(\._type)).isSuperset(of: all)
                            && receiver.deliveries.count == recorded
                    }
                } catch {
                    let recorded = try await Self.events(server)
                    let missing = all.subtracting(recorded.map(\._type)).map(\.rawValue).sorted()
                    let undelivered = Set(recorded.map(\.id)).subtracting(try Self.received(receiver).map(\.id))
                    Issue.record("never recorded: \(missing); recorded, not delivered: \(undelivered.count)")
                    throw error
                }
                let events = try Self.received(receiver)
                #expect(Set(events.map(\._type)) == all)
                for event in events {
                    #expect(
                        Self.missingSections(event).isEmpty,
                        "\(event._type.rawValue) lacks \(Self.missingSections(event))"
                    )
                    #expect(event.bundleId == bundle)
                }
                // The same events as the feed, and in order for each customer.
                let feed = try await Self.events(server)
                #expect(Set(feed.map(\.id)) == Set(events.map(\.id)))
                // Every type's body is the contract's encoding, though written by hand.
                try await EventJSONCheck.expectBodiesAreTheContractsEncoding(server)
                for customer in Set(events.compactMap { $0.customer?.id }) {
                    let sequences = events.filter { $0.customer?.id == customer }.map(\.sequence)
                    #expect(sequences == sequences.sorted(), "\(customer)'s events out of order")
                }
                // Sources: what told the server, whatever the format.
                let sources = Dictionary(grouping: events, by: \._type).mapValues { Set($0.map(\.source.kind)) }
                #expect(sources[.subscription_renewed]?.contains(.notification) == true)
                #expect(sources[.purchase_rejected] == [.confirmation])
                #expect(sources[.access_granted] == [._operator] && sources[.credits_debited] == [.app])
                #expect(sources[.consumption_answerSent] == [.consumption])
                let refund = try #require(events.first { $0._type == .purchase_refunded })
                #expect(refund.refund?.share == 50_000)
                #expect(receiver.deliveries.allSatisfy { $0.verified })
                // The independent judge: Standard Webhooks' own library, and the contract's schema.
                let summary = try await Self.judge(
                    receiver.deliveries,
                    secrets: [endpoint.secret],
                    expect: receiver.deliveries.count
                )
                #expect(Set(summary["types"] as? [String] ?? []) == Set(all.map(\.rawValue)))
            }
        }
    }

    /// Every event of the server's feed.
    static func events(_ server: PurchaseServer) async throws -> [Event] {
        let bytes = try await server.events.feed(after: nil, limit: 1000, bundleId: ServerFixture.bundleId)
        return try JSONDecoder().decode(Components.Schemas.EventPage.self, from: Data(bytes)).items
    }
}
