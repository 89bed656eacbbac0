import Foundation
import Testing
import TillClient
import TillContract
import TillCore
import TillLedger
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// `till shop`, the built executable, against the simulator and the server of the test on loopback ports: what a
/// script (`--json`) and a person (the menu) see, and what the server and the store hold afterwards.
@Suite(
    .sharingTheMachine,
    .timeLimit(.minutes(10)),
    .enabled(if: Prerequisite.tillExecutable.shouldRun, Comment(rawValue: Prerequisite.tillExecutable.skipMessage))
)
struct ShopCommandTests {
    /// Runs `till shop` as the fixture's app, with its files in the fixture's scratch directory.
    func shop(
        _ fixture: ClientFixture,
        _ url: String,
        _ arguments: [String],
        device: SimDevice? = nil,
        findingDevice: Bool = false,
        input: String? = nil
    ) async throws -> TillExecutable.Run {
        var options = [
            "--server", url, "--app-key", fixture.app.appKey, "--simulator", fixture.simulatorURL,
            "--data", fixture.directory.appendingPathComponent("shop").path,
        ]
        if !findingDevice { options += ["--device", (device ?? fixture.device).id] }
        return try await TillExecutable.run(["shop"] + arguments + options, input: input)
    }

    @Test func aScriptListsBuysSpendsAndReadsTheSnapshotAsJSON() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                let products = try await shop(fixture, url, ["products", "--json"])
                #expect(products.status == 0, "\(products)")
                let listed = try #require(try products.json()["products"] as? [[String: Any]])
                #expect(
                    listed.compactMap { $0["productId"] as? String }.sorted()
                        == ["gems.100", "issue.1", "news.free", "premium.monthly", "pro"]
                )
                #expect(
                    listed.first { $0["productId"] as? String == "gems.100" }?["displayPrice"] as? String == "$0.99"
                )

                let gems = try await shop(fixture, url, ["buy", "gems.100", "--json"])
                #expect(gems.status == 0, "\(gems)")
                #expect(try gems.json()["outcome"] as? String == "delivered")
                #expect((try gems.json()["balances"] as? [String: Int])?["gems"] == 100)

                // A server-delivered product comes with its file, on disk where the answer says.
                let pro = try await shop(fixture, url, ["buy", "pro", "--json"])
                #expect(pro.status == 0, "\(pro)")
                let file = try #require((try pro.json()["files"] as? [[String: Any]])?.first)
                let path = try #require(file["path"] as? String)
                #expect(Array(try Data(contentsOf: URL(fileURLWithPath: path))) == ClientFixture.manual)

                // The same request id is spent once; an overdraft is refused with the server's code.
                let spent = try await shop(fixture, url, ["spend", "gems", "30", "--request-id", "r1", "--json"])
                #expect((try spent.json()["balances"] as? [String: Int])?["gems"] == 70, "\(spent)")
                let again = try await shop(fixture, url, ["spend", "gems", "30", "--request-id", "r1", "--json"])
                #expect((try again.json()["balances"] as? [String: Int])?["gems"] == 70, "\(again)")
                let overdraft = try await shop(fixture, url, ["spend", "gems", "1000", "--json"])
                #expect(overdraft.status == 1)
                #expect((try overdraft.json()["error"] as? [String: Any])?["code"] as? String == "insufficientBalance")
                #expect(try await fixture.customer("alice").balances == ["gems": 70])

                // Without --device, the shop finds the device `till serve` prints: the first sandbox tester's.
                let balance = try await shop(fixture, url, ["balance", "--json"], findingDevice: true)
                #expect((try balance.json()["balances"] as? [String: Int])?["gems"] == 70, "\(balance)")

                let entitlements = try await shop(fixture, url, ["entitlements", "--json"])
                let granted = try #require(try entitlements.json()["entitlements"] as? [[String: Any]])
                #expect(granted.map { $0["id"] as? String } == ["pro"])
                #expect(granted.first?["active"] as? Bool == true)
                #expect(try await fixture.unfinished().isEmpty)
            }
        }
    }

    @Test func aCancelledADeclinedAndAnAskToBuyPurchase() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                let cancelled = try await shop(fixture, url, ["buy", "pro", "--cancel", "--json"])
                #expect(cancelled.status == 0, "\(cancelled)")
                #expect(try cancelled.json()["outcome"] as? String == "cancelled")

                let declined = try await shop(fixture, url, ["buy", "pro", "--decline", "--json"])
                #expect(declined.status == 1, "\(declined)")
                #expect(try declined.json()["outcome"] as? String == "failed")
                #expect(try await fixture.customer("alice").purchases.isEmpty)
                // The tester's card works again afterwards.
                #expect(
                    try await fixture.simulator.appStoreConnect.account(id: fixture.account.id).paymentFailure == nil
                )

                let asked = try await shop(fixture, url, ["buy", "pro", "--ask-to-buy", "--json"])
                #expect(asked.status == 0, "\(asked)")
                #expect(try asked.json()["outcome"] as? String == "pending")
                let paymentId = try #require(try asked.json()["paymentId"] as? String)
                #expect(try await fixture.simulator.appStoreConnect.account(id: fixture.account.id).askToBuy == false)
                #expect(try await fixture.customer("alice").purchases.isEmpty)

                // A parent approves; the next launch of the app delivers the purchase.
                _ = try await fixture.simulator.payments.resolveDeferredPayment(id: paymentId, approve: true)
                let after = try await shop(fixture, url, ["entitlements", "--json"])
                #expect(after.errors.contains("delivered at launch: pro"), "\(after)")
                let granted = try #require(try after.json()["entitlements"] as? [[String: Any]])
                #expect(granted.map { $0["id"] as? String } == ["pro"])
                #expect(try await fixture.unfinished().isEmpty)
            }
        }
    }

    @Test func aSecondDeviceRestoresAndDownloadsAgain() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                #expect(try await shop(fixture, url, ["buy", "pro", "--json"]).status == 0)
                let tablet = try await fixture.simulator.appStoreConnect.createDevice(
                    accountId: fixture.account.id,
                    DeviceInput(name: "iPad")
                )
                let restore = try await shop(fixture, url, ["restore", "--json"], device: tablet)
                #expect(restore.status == 0, "\(restore)")
                #expect(try restore.json()["outcome"] as? String == "completed")
                let restored = try #require(try restore.json()["restored"] as? [[String: Any]])
                #expect(restored.map { $0["productId"] as? String } == ["pro"])
                let files = try #require(restored.first?["files"] as? [[String: Any]])
                #expect(files.first?["transferred"] as? Int == ClientFixture.manual.count)

                let stored = try await shop(fixture, url, ["download", "pro", "--json"], device: tablet)
                #expect((try stored.json()["files"] as? [[String: Any]])?.first?["transferred"] as? Int == 0)
                let again = try await shop(fixture, url, ["download", "pro", "--again", "--json"], device: tablet)
                let file = try #require((try again.json()["files"] as? [[String: Any]])?.first)
                #expect(file["transferred"] as? Int == ClientFixture.manual.count, "\(again)")
                let path = try #require(file["path"] as? String)
                #expect(Array(try Data(contentsOf: URL(fileURLWithPath: path))) == ClientFixture.manual)

                // Another App Store account has nothing to restore, and says so.
                let nothing = try await shop(fixture, url, ["restore", "--json"], device: try await newDevice(fixture))
                #expect(nothing.status == 0, "\(nothing)")
                #expect(try nothing.json()["outcome"] as? String == "nothingToRestore")
            }
        }
    }

    @Test func aPurchaseWhileTheServerIsDownWaitsInTheOutboxUntilTheNextLaunch() async throws {
        try await ClientFixture.run { fixture in
            let dead = try await ClientFixture.deadURL()
            let bought = try await shop(fixture, dead, ["buy", "gems.100", "--json"])
            #expect(bought.status == 2, "\(bought)")
            #expect(try bought.json()["outcome"] as? String == "notDelivered")
            #expect(try bought.json()["queuedInOutbox"] as? Bool == true)
            let waiting = try await shop(fixture, dead, ["outbox", "--json"])
            let pending = try #require(try waiting.json()["pending"] as? [[String: Any]])
            #expect(pending.map { $0["productId"] as? String } == ["gems.100"])
            #expect(try await fixture.unfinished().count == 1)

            try await fixture.serve { url in
                let outbox = try await shop(fixture, url, ["outbox", "--json"])
                #expect((try outbox.json()["pending"] as? [Any])?.isEmpty == true, "\(outbox)")
                #expect(outbox.errors.contains("delivered at launch: gems.100"), "\(outbox)")
                #expect(try await fixture.customer("alice").balances == ["gems": 100])
                #expect(try await fixture.customer("alice").purchases.count == 1)
                #expect(try await fixture.unfinished().isEmpty)
            }
        }
    }

    @Test func theInteractiveMenu() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                // products; buy product 1 (gems.100), confirming the sheet; balance; quit.
                let run = try await shop(fixture, url, [], input: "1\n2\ngems.100\n\n3\nq\n")
                #expect(run.status == 0, "\(run)")
                #expect(run.output.contains("Till shop: customer alice"))
                #expect(run.output.contains("100 Gems"))
                #expect(run.output.contains("✓ gems.100 delivered"))
                // The balance command's line; a delivery finished in the background may print between its prompt
                // and its answer, so the line is found whatever came before it.
                let balanceLines = run.output.split(separator: "\n").filter {
                    $0.hasSuffix("100 gems") && !$0.contains("balance:")
                }
                #expect(!balanceLines.isEmpty, "\(run)")
                #expect(try await fixture.customer("alice").balances == ["gems": 100])
            }
        }
    }

    func newDevice(_ fixture: ClientFixture) async throws -> SimDevice {
        let account = try await fixture.simulator.appStoreConnect.createAccount(AccountInput(environment: "Sandbox"))
        return try await fixture.simulator.appStoreConnect.createDevice(accountId: account.id, DeviceInput(name: "new"))
    }
}
