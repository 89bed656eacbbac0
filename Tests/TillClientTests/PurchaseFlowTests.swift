import Foundation
import Testing
import TillClient
import TillCore

@testable import TillServer
@testable import TillSimulator

/// Purchases as an app makes them: store, server, snapshot, content, finish, on live loopback sockets.
@Suite(.timeLimit(.minutes(2)))
struct PurchaseFlowTests {
    @Test func aPurchaseOfEachProductTypeIsDeliveredBeforeItIsFinished() async throws {
        try await ClientFixture.run { fixture in
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
                    #expect(delivery.snapshot.owns(productId: productId))
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
}
