import Foundation
import Testing
import TillCatalogue
import TillClient
import TillContract
import TillCore
import TillLedger
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// The AppTransaction sent once per customer: from `SimulatorStorefront` and from `StoreKit2Storefront`, across
/// launches (a new coordinator over the same folder is a relaunch), again for another customer, again after a failure
/// a retry can fix, never again after a refusal unless forced; StoreKit 1 has none.
@Suite(.sharingTheMachine, .timeLimit(.minutes(10)))
struct AppTransactionSendingTests {
    /// How many `PUT /v1/customers/{id}/app-transaction` the server answered, whatever their status (or with it).
    func puts(_ fixture: ClientFixture, status: Int? = nil) async throws -> Int {
        let exposition = String(decoding: try await fixture.server.metricsExposition(), as: UTF8.self)
        let prefix = #"till_http_requests_total{method="PUT",route="/v1/customers/{customer}/app-transaction",status=""#
        return exposition.split(separator: "\n").reduce(0) { total, line in
            guard line.hasPrefix(prefix) else { return total }
            if let status, !line.hasPrefix(prefix + "\(status)\"") { return total }
            return total + (line.split(separator: " ").last.flatMap { Double($0) }.map { Int($0) } ?? 0)
        }
    }

    func appTransactionId(_ fixture: ClientFixture) throws -> String {
        Receipts.appTransactionId(accountId: fixture.account.id, appAppleId: try #require(fixture.app.appAppleId))
    }

    @Test func itIsSentOnceAcrossLaunchesAndAgainForAnotherCustomer() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                // First launch: sent, and the server keeps it for the customer.
                let launch = try fixture.coordinator(url)
                let report = await launch.start()
                guard case .sent(let kept) = report.appTransaction else {
                    Issue.record("not sent at the first launch: \(report.appTransaction)")
                    return
                }
                let expectedId = try appTransactionId(fixture)
                #expect(kept.customerId == "alice" && kept.appTransactionId == expectedId)
                #expect(kept.environment == .sandbox && kept.bundleId == ClientFixture.bundleId)
                let stored = try await fixture.server.appTransactions.appTransaction(
                    bundleId: ClientFixture.bundleId,
                    customerId: "alice"
                )
                #expect(stored == kept)
                #expect(try await puts(fixture) == 1)
                // Within the run, asking again and the periodic retry send nothing.
                #expect(await launch.sendAppTransaction() == .alreadySent)
                await launch.retry()
                #expect(await launch.appTransactions.record?.customerId == "alice")

                // Second launch over the same folder: nothing sent.
                let relaunch = try fixture.coordinator(url)
                #expect(await relaunch.start().appTransaction == .alreadySent)
                await relaunch.retry()
                #expect(try await puts(fixture) == 1)

                // Another customer signs in to the app on this installation: sent for them, once.
                let bob = try fixture.coordinator(url, customer: "bob")
                guard case .sent(let bobs) = await bob.start().appTransaction else {
                    Issue.record("not sent for another customer")
                    return
                }
                #expect(bobs.customerId == "bob")
                #expect(try await fixture.coordinator(url, customer: "bob").start().appTransaction == .alreadySent)
                #expect(try await puts(fixture) == 2)

                // A StoreKit 2 app (AppTransaction.shared) on another installation: sent once too.
                let kit = fixture.storeKit2()
                let storeKit2 = try fixture.coordinator(url, folder: "device-2", store: StoreKit2Storefront(kit: kit))
                guard case .sent = await storeKit2.start().appTransaction else {
                    Issue.record("StoreKit 2's AppTransaction was not sent")
                    return
                }
                let again = try fixture.coordinator(
                    url,
                    folder: "device-2",
                    store: StoreKit2Storefront(kit: fixture.storeKit2())
                )
                #expect(await again.start().appTransaction == .alreadySent)
                #expect(try await puts(fixture) == 3 && kit.appTransactionReads == 1)
            }
        }
    }

    @Test func anUnreachableServerGetsItLaterAndARefusalIsNotSentAgain() async throws {
        try await ClientFixture.run { fixture in
            // The server is down: not sent, nothing recorded.
            let down = try fixture.coordinator(try await ClientFixture.deadURL(), timeout: 5)
            guard case .willRetry(let error) = await down.start().appTransaction else {
                Issue.record("an unreachable server was not reported as a failure to retry")
                return
            }
            #expect(error.isTemporary)
            #expect(await down.appTransactions.record == nil)

            try await fixture.serve { url in
                // The next launch, the server up: sent.
                guard case .sent = try await fixture.coordinator(url).start().appTransaction else {
                    Issue.record("not sent once the server was back")
                    return
                }
                #expect(try await puts(fixture, status: 200) == 1)

                // Refused for good (the app takes no sandbox data): recorded, and not sent at the next launch.
                var settings = ServerAppInput()
                settings.acceptSandbox = false
                _ = try await fixture.server.catalogue.updateApp(bundleId: ClientFixture.bundleId, settings)
                let carol = try fixture.coordinator(url, customer: "carol")
                guard case .refused(let refusal) = await carol.start().appTransaction else {
                    Issue.record("a refusal was not reported")
                    return
                }
                #expect(refusal.status == 422 && refusal.code == "sandboxNotAccepted")
                let relaunched = try fixture.coordinator(url, customer: "carol")
                guard case .refused(let remembered) = await relaunched.start().appTransaction else {
                    Issue.record("the refusal was not remembered")
                    return
                }
                #expect(remembered.code == "sandboxNotAccepted")
                #expect(try await puts(fixture, status: 422) == 1)

                // Once the operator accepts sandbox data again, the app may force it.
                settings.acceptSandbox = true
                _ = try await fixture.server.catalogue.updateApp(bundleId: ClientFixture.bundleId, settings)
                guard case .sent(let kept) = await relaunched.sendAppTransaction(force: true) else {
                    Issue.record("a forced send after the fix was not sent")
                    return
                }
                #expect(kept.customerId == "carol")
                #expect(await relaunched.sendAppTransaction() == .alreadySent)
                #expect(try await puts(fixture) == 3)
            }
        }
    }

    @Test func storeKit1HasNoAppTransaction() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                let coordinator = try fixture.coordinator(
                    url,
                    store: StoreKit1Storefront(kit: fixture.storeKit1())
                )
                #expect(await coordinator.start().appTransaction == .unavailable)
                #expect(try await puts(fixture) == 0)
            }
        }
    }
}
