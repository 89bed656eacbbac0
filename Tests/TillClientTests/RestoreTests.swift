import Foundation
import Testing
import TillClient
import TillContract
import TillCore
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// Restore as the caller sees it: completed with what came back, nothing to restore, or failed.
@Suite(.sharingTheMachine, .timeLimit(.minutes(10)))
struct RestoreTests {
    @Test(arguments: TestDatabase.all) func restoreOnASecondDeviceOfTheSameAccountDeliversWhatIsRestorable(
        _ database: TestDatabase
    ) async throws {
        try await ClientFixture.run(database: database) { fixture in
            try await fixture.serve { url in
                let first = try fixture.coordinator(url)
                for productId in ["gems.100", "pro", "premium.monthly", "news.free", "issue.1"] {
                    guard case .delivered = try await first.purchase(productId: productId) else {
                        Issue.record("\(productId) was not delivered on the first device")
                        return
                    }
                }

                let tablet = try await fixture.simulator.appStoreConnect.createDevice(
                    accountId: fixture.account.id,
                    DeviceInput(name: "iPad")
                )
                let second = try fixture.coordinator(
                    url,
                    folder: "device-2",
                    storefront: fixture.storefront(device: tablet)
                )
                #expect(await !second.isEntitled(to: "pro"))
                let outcome = await second.restore()
                guard case .completed(let deliveries) = outcome else {
                    Issue.record("expected completed, got \(outcome)")
                    return
                }
                // The store restores non-consumables and subscriptions, never consumables or non-renewing ones.
                #expect(Set(deliveries.map(\.transaction.productId)) == ["pro", "premium.monthly", "news.free"])
                #expect(deliveries.allSatisfy { $0.transaction.state == .restored && $0.finished })
                #expect(deliveries.first { $0.transaction.productId == "pro" }?.files.map(\.name) == ["manual.pdf"])
                for entitlement in ["pro", "premium", "news"] {
                    #expect(await second.isEntitled(to: entitlement), "\(entitlement)")
                }
                // The account's balance follows the customer, not the device.
                #expect(await second.balance(of: "gems") == 100)
                #expect(try await fixture.unfinished(device: tablet).isEmpty)
                #expect(try await fixture.customer("alice").balances == ["gems": 100])
            }
        }
    }

    @Test(arguments: TestDatabase.all) func restoreWithNothingToRestoreSaysSo(_ database: TestDatabase) async throws {
        try await ClientFixture.run(database: database) { fixture in
            try await fixture.serve { url in
                let coordinator = try fixture.coordinator(url)
                // A consumable is never restored.
                guard case .delivered = try await coordinator.purchase(productId: "gems.100") else {
                    Issue.record("gems were not delivered")
                    return
                }
                #expect(await coordinator.restore() == .nothingToRestore)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func restoreTheStoreCannotDoIsAFailureForTheCaller(_ database: TestDatabase)
        async throws
    {
        try await ClientFixture.run(database: database) { fixture in
            try await fixture.serve { url in
                let coordinator = try fixture.coordinator(url)
                try await fixture.simulator.appStoreConnect.deleteAccount(id: fixture.account.id)
                let outcome = await coordinator.restore()
                guard case .failed(let failure) = outcome else {
                    Issue.record("expected failed, got \(outcome)")
                    return
                }
                #expect(failure.storeError != nil && failure.delivered.isEmpty)
            }
        }
    }
}
