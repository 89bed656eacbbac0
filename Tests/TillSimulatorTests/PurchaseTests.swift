import Foundation
import Testing
import TillCore
import TillFormats
import TillHTTPKit
import TillTestSupport

@testable import TillSimulator

@Suite(.sharingTheMachine)
struct PurchaseTests {
    @Test(arguments: TestDatabase.all) func eachProductTypeIsPurchasedAndSignedVerifiably(_ database: TestDatabase)
        async throws
    {
        let fixture = try await SimulatorFixture.make(database: database)
        for productId in ["gems.100", "pro", "issue.1", "newsletter", "premium.monthly"] {
            let purchase = try await fixture.buy(productId)
            #expect(purchase.state == .purchased, "\(productId)")
            let jws = try #require(purchase.signedTransaction)
            let verified = try #require(
                await fixture.jwsVerifier.verify(jws, as: JWSTransactionDecodedPayload.self).value
            )
            #expect(verified.payload.productId == productId)
            #expect(verified.payload.transactionId == purchase.transactionId)
            #expect(verified.payload.environment == .sandbox)
            // Every transaction carries one of Apple's four types; a free subscription is a non-consumable, as
            // in its receipt (1707 = 0) and in the history filter.
            let expected: [String: TransactionType] = [
                "gems.100": .consumable, "pro": .nonConsumable, "issue.1": .nonRenewingSubscription,
                "newsletter": .nonConsumable, "premium.monthly": .autoRenewableSubscription,
            ]
            #expect(verified.payload.type == expected[productId], "\(productId)")
            let iOS6 = TransactionReceiptVerifier(
                .init(
                    anchors: TrustAnchors(
                        roots: [fixture.simulator.signer.receiptAuthority.root],
                        intermediates: [fixture.simulator.signer.receiptAuthority.intermediate]
                    ),
                    bundleId: SimulatorFixture.bundleId
                )
            )
            let transactionReceipt = try #require(purchase.transactionReceipt)
            #expect(
                await iOS6.verify(base64: transactionReceipt).value?.purchaseInfo.transactionId
                    == purchase.transactionId
            )
        }
        let subscription = try await fixture.buy("premium.monthly")
        let subscriptionJWS = try #require(subscription.signedTransaction)
        let payload = try #require(
            await fixture.jwsVerifier.verify(subscriptionJWS, as: JWSTransactionDecodedPayload.self).value?.payload
        )
        // Buying the current subscription again charges nothing and returns it.
        #expect(payload.expiresDate != nil && payload.subscriptionGroupIdentifier == "premium")
    }

    @Test(arguments: TestDatabase.all) func failedCancelledAndDeferredPayments(_ database: TestDatabase) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        let cancelled = try await fixture.buy("pro", userAction: "cancel")
        #expect(cancelled.state == .failed && cancelled.error?.code == StoreKitErrorCode.paymentCancelled.rawValue)
        #expect(
            try await fixture.buy("no.such.product").error?.code == StoreKitErrorCode.storeProductNotAvailable.rawValue
        )
        #expect(try await fixture.buy("pro", quantity: 2).error?.code == StoreKitErrorCode.paymentInvalid.rawValue)

        _ = try await fixture.simulator.appStoreConnect.updateAccount(
            id: fixture.account.id,
            AccountInput(canMakePayments: false)
        )
        #expect(try await fixture.buy("pro").error?.code == StoreKitErrorCode.paymentNotAllowed.rawValue)
        _ = try await fixture.simulator.appStoreConnect.updateAccount(
            id: fixture.account.id,
            AccountInput(canMakePayments: true, paymentFailure: 0)
        )
        #expect(try await fixture.buy("pro").state == .failed)

        _ = try await fixture.simulator.appStoreConnect.updateAccount(
            id: fixture.account.id,
            AccountInput(paymentFailure: -1, askToBuy: true)
        )
        let deferred = try await fixture.buy("pro")
        #expect(deferred.state == .deferred && deferred.transactionId == nil)
        await #expect {
            try await fixture.simulator.payments.finish(
                entryId: deferred.id,
                deviceId: fixture.phone.id,
                environment: .sandbox
            )
        } throws: { $0 is any Refusal }
        let approved = try await fixture.simulator.payments.resolveDeferredPayment(
            id: try #require(deferred.paymentId),
            approve: true
        )
        #expect(approved.id == deferred.id && approved.state == .purchased && approved.transactionId != nil)

        let another = try await fixture.buy("gems.100")
        let declined = try await fixture.simulator.payments.resolveDeferredPayment(
            id: try #require(another.paymentId),
            approve: false
        )
        #expect(declined.state == .failed)
    }

    @Test(arguments: TestDatabase.all) func unfinishedTransactionsComeBackUntilFinished(_ database: TestDatabase)
        async throws
    {
        let fixture = try await SimulatorFixture.make(database: database)
        let gems = try await fixture.buy("gems.100", quantity: 3)
        #expect(gems.quantity == 3)
        let first = try await fixture.simulator.payments.queue(
            deviceId: fixture.phone.id,
            bundleId: SimulatorFixture.bundleId,
            environment: .sandbox
        )
        let second = try await fixture.simulator.payments.queue(
            deviceId: fixture.phone.id,
            bundleId: SimulatorFixture.bundleId,
            environment: .sandbox
        )
        #expect(first.map(\.id) == [gems.id] && second.map(\.id) == [gems.id])
        // The other device's queue is its own.
        #expect(
            try await fixture.simulator.payments.queue(
                deviceId: fixture.tablet.id,
                bundleId: SimulatorFixture.bundleId,
                environment: .sandbox
            ).isEmpty
        )
        // An unfinished consumable is in the receipt; once finished, it leaves it.
        #expect(try await fixture.receipt().inAppPurchases.map(\.transactionId) == [gems.transactionId])
        try await fixture.simulator.payments.finish(entryId: gems.id, deviceId: fixture.phone.id, environment: .sandbox)
        #expect(
            try await fixture.simulator.payments.queue(
                deviceId: fixture.phone.id,
                bundleId: SimulatorFixture.bundleId,
                environment: .sandbox
            ).isEmpty
        )
        #expect(try await fixture.receipt().inAppPurchases.isEmpty)
    }

    @Test(arguments: TestDatabase.all) func restoreBringsBackOnlyRestorableProductsOnAnotherDevice(
        _ database: TestDatabase
    ) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        #expect(
            try await fixture.simulator.payments.restore(
                deviceId: fixture.tablet.id,
                bundleId: SimulatorFixture.bundleId,
                environment: .sandbox
            ).transactions.isEmpty
        )
        var bought: [String: QueueTransaction] = [:]
        for productId in ["gems.100", "pro", "issue.1", "newsletter", "premium.monthly"] {
            bought[productId] = try await fixture.buy(productId)
        }
        let restore = try await fixture.simulator.payments.restore(
            deviceId: fixture.tablet.id,
            bundleId: SimulatorFixture.bundleId,
            environment: .sandbox
        )
        #expect(restore.status == .completed)
        #expect(Set(restore.transactions.map(\.productId)) == ["pro", "newsletter", "premium.monthly"])
        #expect(restore.transactions.allSatisfy { $0.state == .restored })
        let pro = try #require(restore.transactions.first { $0.productId == "pro" })
        #expect(
            pro.originalTransactionId == bought["pro"]?.transactionId
                && pro.transactionId != bought["pro"]?.transactionId
        )
        // The restored transactions are in the tablet's queue until finished.
        #expect(
            try await fixture.simulator.payments.queue(
                deviceId: fixture.tablet.id,
                bundleId: SimulatorFixture.bundleId,
                environment: .sandbox
            ).count == 3
        )

        try await fixture.simulator.appStoreConnect.deleteAccount(id: fixture.account.id)
        let failed = try await fixture.simulator.payments.restore(
            deviceId: fixture.tablet.id,
            bundleId: SimulatorFixture.bundleId,
            environment: .sandbox
        )
        #expect(failed.status == .failed && failed.error != nil)
    }

    @Test(arguments: TestDatabase.all) func nonConsumablesAreNotChargedTwice(_ database: TestDatabase) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        let first = try await fixture.buy("pro")
        let again = try await fixture.buy("pro", on: fixture.tablet)
        let againJWS = try #require(again.signedTransaction)
        let payload = try #require(
            await fixture.jwsVerifier.verify(againJWS, as: JWSTransactionDecodedPayload.self).value?.payload
        )
        #expect(payload.originalTransactionId == first.transactionId && payload.price == 0)
    }
}
