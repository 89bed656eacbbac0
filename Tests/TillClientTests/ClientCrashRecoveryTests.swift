import Foundation
import Testing
import TillClient
import TillContract
import TillCore
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// The app killed at the worst moments: after a new launch on the same files, each purchase completes once.
@Suite(.sharingTheMachine, .timeLimit(.minutes(10)))
struct ClientCrashRecoveryTests {
    @Test(arguments: TestDatabase.all) func killedBetweenPurchaseAndSubmissionThePurchaseCompletesOnceAtTheNextLaunch(
        _ database: TestDatabase
    ) async throws {
        try await ClientFixture.run(database: database) { fixture in
            try await fixture.serve { url in
                // The store charged; the app died before it could hand the transactions to its coordinator.
                let gems = try await fixture.buy("gems.100")
                let pro = try await fixture.buy("pro")
                #expect(gems.state == .purchased && pro.state == .purchased)
                #expect(try await fixture.customer("alice").purchases.isEmpty)

                let launch = try await fixture.coordinator(url).start()
                let delivered = launch.transactions.compactMap { outcome -> Delivery? in
                    if case .delivered(let delivery) = outcome { return delivery }
                    return nil
                }
                #expect(delivered.map(\.transaction.productId).sorted() == ["gems.100", "pro"])
                #expect(delivered.first { $0.transaction.productId == "pro" }?.files.map(\.name) == ["manual.pdf"])
                #expect(launch.snapshot?.balance("gems") == 100)
                #expect(try await fixture.unfinished().isEmpty)

                // Launching again finds nothing left to do, and nothing was counted twice.
                let again = try await fixture.coordinator(url).start()
                #expect(again.transactions.isEmpty && again.resent.isEmpty)
                let customer = try await fixture.customer("alice")
                #expect(customer.balances == ["gems": 100])
                #expect(customer.purchases.count == 2)
                for transaction in [gems, pro] {
                    #expect(try await fixture.submissions(containing: transaction.transactionId) == 1)
                }
            }
        }
    }

    @Test(arguments: TestDatabase.all) func killedWhileTheSubmissionWasInTheOutboxItIsSentOnceAtTheNextLaunch(
        _ database: TestDatabase
    ) async throws {
        try await ClientFixture.run(database: database) { fixture in
            var url = ""
            try await fixture.serve { url = $0 }
            let port = try #require(URLComponents(string: url)?.port)
            // Server down: the purchase goes to the outbox, and the app is then killed.
            let outcome = try await fixture.coordinator(url).purchase(productId: "gems.100")
            guard case .notDelivered(let failure) = outcome, failure.queuedInOutbox else {
                Issue.record("expected a queued submission, got \(outcome)")
                return
            }
            let transactionId = failure.transaction.transactionId

            try await fixture.serve(port: port) { url in
                let launch = try await fixture.coordinator(url).start()
                #expect(launch.resent.count == 1)
                guard case .acknowledged? = launch.resent.first else {
                    Issue.record("the outbox did not resend at launch: \(launch.resent)")
                    return
                }
                #expect(launch.transactions.count == 1)
                guard case .delivered(let delivery)? = launch.transactions.first else {
                    Issue.record("expected delivered, got \(launch.transactions)")
                    return
                }
                #expect(delivery.snapshot.balance("gems") == 100)
                #expect(try await fixture.unfinished().isEmpty)
                #expect(try await fixture.customer("alice").balances == ["gems": 100])
                #expect(try await fixture.submissions(containing: transactionId) == 1)
            }
        }
    }

    @Test(arguments: TestDatabase.all)
    func killedBetweenDownloadAndFinishThePurchaseCompletesOnceWithoutDownloadingAgain(_ database: TestDatabase)
        async throws
    {
        try await ClientFixture.run(database: database) { fixture in
            try await fixture.serve { url in
                // Everything succeeds up to the finish, which never happens: the process dies first.
                let dying = ObservedStorefront(fixture.storefront()) { _ in throw Killed() }
                let first = try fixture.coordinator(url, store: dying)
                for productId in ["pro", "gems.100"] {
                    let outcome = try await first.purchase(productId: productId)
                    guard case .notDelivered(let failure) = outcome else {
                        Issue.record("expected notDelivered, got \(outcome)")
                        continue
                    }
                    #expect(failure.stage == .finish && !failure.queuedInOutbox)
                }
                #expect(
                    await first.content.isStored(
                        CatalogueFile(
                            name: "manual.pdf",
                            sha256: ClientFixture.sha256(ClientFixture.manual),
                            size: 3_000_000,
                            contentType: "application/octet-stream"
                        ),
                        productId: "pro"
                    )
                )
                #expect(try await fixture.unfinished().count == 2)
                #expect(dying.finishes.count == 0)

                let store = ObservedStorefront(fixture.storefront())
                let launch = try await fixture.coordinator(url, store: store).start()
                var delivered: [String: Delivery] = [:]
                for outcome in launch.transactions {
                    if case .delivered(let delivery) = outcome { delivered[delivery.transaction.productId] = delivery }
                }
                #expect(delivered.keys.sorted() == ["gems.100", "pro"])
                let manual = try #require(delivered["pro"]?.files.first)
                #expect(manual.transferred == 0)  // already stored: not fetched again
                #expect(Array(try Data(contentsOf: manual.url)) == ClientFixture.manual)
                #expect(store.finishes.count == 2)
                #expect(try await fixture.unfinished().isEmpty)
                // The store handed the same transactions back signed anew; the ledger still counts each once.
                let customer = try await fixture.customer("alice")
                #expect(customer.balances == ["gems": 100])
                #expect(customer.purchases.count == 2)
            }
        }
    }
}
