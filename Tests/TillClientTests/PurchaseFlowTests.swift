import Foundation
import Testing
import TillAppStore
import TillCatalogue
import TillClient
import TillContract
import TillCore
import TillLedger
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// Purchases as an app makes them: store, server, snapshot, content, finish, on live loopback sockets.
@Suite(.sharingTheMachine, .timeLimit(.minutes(10)))
struct PurchaseFlowTests {
    @Test(arguments: TestDatabase.all) func aPurchaseOfEachProductTypeIsDeliveredBeforeItIsFinished(
        _ database: TestDatabase
    ) async throws {
        try await ClientFixture.run(database: database) { fixture in
            try await fixture.serve { url in
                let entitlementsAtFinish = Counter()
                let store = ObservedStorefront(fixture.storefront()) { transaction in
                    // At finish time the server has the purchase and, for files, they are on disk.
                    let customer = try await fixture.customer("alice")
                    if customer.purchases.contains(where: { $0.productId == transaction.productId }) {
                        entitlementsAtFinish.add(transaction.productId)
                    }
                }
                let coordinator = try fixture.coordinator(url, store: store)
                _ = await coordinator.start()

                var delivered: [String: Delivery] = [:]
                for productId in ["gems.100", "pro", "premium.monthly", "issue.1", "news.free"] {
                    let outcome = try await coordinator.purchase(productId: productId)
                    guard case .delivered(let delivery) = outcome else {
                        Issue.record("\(productId): \(outcome)")
                        continue
                    }
                    delivered[productId] = delivery
                    #expect(delivery.transaction.productId == productId)
                    // A consumable is never owned: it counts through its balance (below).
                    #expect(delivery.snapshot.owns(productId: productId) == (productId != "gems.100"))
                }
                #expect(entitlementsAtFinish.all == ["gems.100", "pro", "premium.monthly", "issue.1", "news.free"])
                #expect(store.finishes.count == 5)
                #expect(try await fixture.unfinished().isEmpty)

                #expect(await coordinator.balance(of: "gems") == 100)
                for entitlement in ["pro", "premium", "issue-1", "news"] {
                    #expect(await coordinator.isEntitled(to: entitlement), "\(entitlement)")
                }
                // Server-delivered products came with their files, checked; the others with none.
                let manual = try #require(delivered["pro"]?.files.first)
                #expect(Array(try Data(contentsOf: manual.url)) == ClientFixture.manual)
                let issue = try #require(delivered["issue.1"]?.files.first)
                #expect(Array(try Data(contentsOf: issue.url)) == ClientFixture.issue)
                #expect(delivered["gems.100"]?.files.isEmpty == true)
                #expect(await coordinator.outbox.pending.isEmpty)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func aCancelledPurchaseIsReportedAsCancelledAndNothingIsSubmitted(
        _ database: TestDatabase
    ) async throws {
        try await ClientFixture.run(database: database) { fixture in
            try await fixture.serve { url in
                let coordinator = try fixture.coordinator(url, storefront: fixture.storefront { _ in .cancel })
                let outcome = try await coordinator.purchase(productId: "pro")
                guard case .userCancelled(let productId) = outcome else {
                    Issue.record("expected cancelled, got \(outcome)")
                    return
                }
                #expect(productId == "pro")
                // Not charged, nothing sent, nothing waiting; the failed entry is finished so it does not come back.
                #expect(try await fixture.customer("alice").purchases.isEmpty)
                #expect(try await fixture.server.queueAdmin.submissions(state: .pending).items.isEmpty)
                #expect(await coordinator.outbox.pending.isEmpty)
                #expect(try await fixture.unfinished().isEmpty)
                #expect(await !coordinator.isEntitled(to: "pro"))
            }
        }
    }

    @Test(arguments: TestDatabase.all) func aDeclinedPaymentIsAFailureWithTheStoresCode(_ database: TestDatabase)
        async throws
    {
        try await ClientFixture.run(database: database) { fixture in
            _ = try await fixture.simulator.appStoreConnect.updateAccount(
                id: fixture.account.id,
                AccountInput(paymentFailure: 0)
            )
            try await fixture.serve { url in
                let coordinator = try fixture.coordinator(url)
                let outcome = try await coordinator.purchase(productId: "pro")
                guard case .failed(_, let error) = outcome else {
                    Issue.record("expected failed, got \(outcome)")
                    return
                }
                #expect(error.code == .unknown && error.code.skErrorCode == 0 && !error.isCancellation)
                #expect(try await fixture.customer("alice").purchases.isEmpty)
                #expect(try await fixture.unfinished().isEmpty)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func anAskToBuyPurchaseIsPendingUntilApprovedThenDeliveredFromTheUpdates(
        _ database: TestDatabase
    ) async throws {
        try await ClientFixture.run(database: database) { fixture in
            _ = try await fixture.simulator.appStoreConnect.updateAccount(
                id: fixture.account.id,
                AccountInput(askToBuy: true)
            )
            try await fixture.serve { url in
                let coordinator = try fixture.coordinator(url)
                let outcome = try await coordinator.purchase(productId: "pro")
                guard case .pending(let pending) = outcome else {
                    Issue.record("expected pending, got \(outcome)")
                    return
                }
                #expect(pending.productId == "pro" && pending.paymentId != nil)
                #expect(try await fixture.customer("alice").purchases.isEmpty)

                // The parent approves; the app, observing the queue, delivers it without being asked.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { await coordinator.run(every: 0.2) }
                    _ = try await fixture.simulator.payments.resolveDeferredPayment(
                        id: try #require(pending.paymentId),
                        approve: true
                    )
                    var delivered: Delivery?
                    for await event in coordinator.events {
                        if case .delivered(let delivery) = event.outcome, delivery.transaction.productId == "pro" {
                            delivered = delivery
                            break
                        }
                    }
                    group.cancelAll()
                    let delivery = try #require(delivered)
                    #expect(delivery.files.map(\.name) == ["manual.pdf"])
                }
                #expect(await coordinator.isEntitled(to: "pro"))
                #expect(try await fixture.unfinished().isEmpty)
                #expect(try await fixture.customer("alice").purchases.count == 1)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func theCatalogueComesFromTheServerWithTheStoresPrices(_ database: TestDatabase)
        async throws
    {
        try await ClientFixture.run(database: database) { fixture in
            try await fixture.serve { url in
                _ = try await fixture.server.catalogue.putProduct(
                    bundleId: ClientFixture.bundleId,
                    productId: "retired",
                    CatalogProductInput(type: .nonConsumable, entitlements: ["retired"])
                )
                let coordinator = try fixture.coordinator(url)
                let offered = try await coordinator.offeredProducts()
                #expect(
                    offered.products.map(\.productId).sorted() == [
                        "gems.100", "issue.1", "news.free", "premium.monthly", "pro",
                    ]
                )
                #expect(offered.invalidProductIds == ["retired"])
                let gems = try #require(offered.products.first { $0.productId == "gems.100" })
                #expect(gems.store.displayPrice == "$0.99" && gems.store.displayName == "100 Gems")
                #expect(gems.store.price == Decimal(string: "0.99") && gems.store.currencyCode == "USD")
                #expect(gems.store.type == .consumable && gems.store.subscription == nil)
                let premium = try #require(offered.products.first { $0.productId == "premium.monthly" })
                #expect(premium.store.subscription?.period == StoreSubscriptionPeriod(value: 1, unit: .month))
                #expect(premium.store.subscription?.groupId == "premium")
                #expect(gems.catalogue.credits == ["gems": 100] && !gems.catalogue.isServerDelivered)
                #expect(offered.products.first { $0.productId == "pro" }?.catalogue.isServerDelivered == true)
                #expect(try await fixture.storefront().canMakePayments())
            }
        }
    }

    @Test(arguments: TestDatabase.all) func aPurchaseTheServerRefusesIsReportedAndLeftUnfinished(
        _ database: TestDatabase
    ) async throws {
        try await ClientFixture.run(database: database) { fixture in
            try await fixture.serve { url in
                // Alice's purchase, submitted for her; then the device's app signs in as bob before finishing it.
                let purchase = try await fixture.buy("pro")
                _ = try await fixture.client(url).submit(
                    .signedTransaction(try #require(purchase.signedTransaction)),
                    customerId: "alice"
                )
                let bob = try fixture.coordinator(url, customer: "bob")
                let outcomes = await bob.handleUnfinished()
                guard case .notDelivered(let failure)? = outcomes.first else {
                    Issue.record("expected notDelivered, got \(outcomes)")
                    return
                }
                #expect(failure.isRefusedByServer && failure.error.code == "ownedByAnotherCustomer")
                #expect(await bob.outbox.rejected.map(\.code) == ["ownedByAnotherCustomer"])
                // Not finished, not retried against the server, not granted.
                #expect(try await fixture.unfinished().count == 1)
                let again = await bob.handleUnfinished()
                guard case .notDelivered(let second)? = again.first else {
                    Issue.record("expected notDelivered, got \(again)")
                    return
                }
                #expect(second.isRefusedByServer)
                let submitted = try await fixture.submissions(containing: purchase.transactionId)
                #expect(submitted == 2, "submissions holding the transaction: \(submitted)")
                #expect(await !bob.isEntitled(to: "pro"))
            }
        }
    }

    @Test(arguments: TestDatabase.all) func aDeclinedAskToBuyIsReportedAsFailedAndNothingIsSubmitted(
        _ database: TestDatabase
    ) async throws {
        try await ClientFixture.run(database: database) { fixture in
            _ = try await fixture.simulator.appStoreConnect.updateAccount(
                id: fixture.account.id,
                AccountInput(askToBuy: true)
            )
            try await fixture.serve { url in
                let coordinator = try fixture.coordinator(url)
                guard case .pending(let pending) = try await coordinator.purchase(productId: "pro") else {
                    Issue.record("expected pending")
                    return
                }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { await coordinator.run(every: 0.2) }
                    _ = try await fixture.simulator.payments.resolveDeferredPayment(
                        id: try #require(pending.paymentId),
                        approve: false
                    )
                    var declined: StoreError?
                    for await event in coordinator.events {
                        if case .failed(let productId, let error) = event.outcome, productId == "pro" {
                            declined = error
                            break
                        }
                    }
                    group.cancelAll()
                    #expect(declined?.isCancellation == false)
                }
                #expect(try await fixture.unfinished().isEmpty)
                #expect(try await fixture.customer("alice").purchases.isEmpty)
                #expect(await coordinator.outbox.pending.isEmpty)
            }
        }
    }
}
