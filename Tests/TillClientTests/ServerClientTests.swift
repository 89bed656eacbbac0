import Foundation
import Testing
import TillClient
import TillContract
import TillCore
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The server's app API through ``TillServerClient``, and how each kind of failure comes out.
@Suite(.sharingTheMachine, .timeLimit(.minutes(10)))
struct ServerClientTests {
    /// A base URL the client cannot send to is a clear error on every call, not a request to somewhere else.
    @Test func aBaseURLThatIsNotHTTPFailsEveryCallSayingSo() async {
        let client = TillServerClient(baseURL: "ftp://till.example.com", appKey: "tk_x")
        await #expect {
            _ = try await client.customer("alice")
        } throws: { error in
            let error = error as? TillClientError
            return error?.kind == .unreachable && error?.message.contains("not an http(s) URL") == true
        }
    }

    /// A server that is not there is said in a few words, not as Foundation's whole error.
    @Test func aServerThatIsNotListeningIsSaidToRefuseTheConnection() async throws {
        let port = try PrivatePostgres.freePort()
        let client = TillServerClient(baseURL: "http://127.0.0.1:\(port)", appKey: "tk_x")
        await #expect {
            _ = try await client.customer("alice")
        } throws: { error in
            let error = error as? TillClientError
            return error?.kind == .unreachable
                && error?.message == "could not reach http://127.0.0.1:\(port)/v1/customers/alice: connection refused "
                    + "(is the server running there?)"
        }
    }

    @Test(arguments: TestDatabase.all) func theMasterListIsFetchedAgainOnlyWhenItChanged(_ database: TestDatabase)
        async throws
    {
        try await ClientFixture.run(database: database) { fixture in
            try await fixture.serve { url in
                let client = fixture.client(url)
                guard case .updated(let list) = try await client.products() else {
                    Issue.record("no master list")
                    return
                }
                #expect(list.productIds.contains("pro") && !list.etag.isEmpty)
                #expect(list.product("pro")?.content.map(\.name) == ["manual.pdf"])
                #expect(list.product("gems.100")?.productType == .consumable)
                #expect(try await client.products(ifNoneMatch: list.etag) == .notModified)
                try await fixture.upload(productId: "pro", name: "extra.txt", Array("more".utf8))
                guard case .updated(let changed) = try await client.products(ifNoneMatch: list.etag) else {
                    Issue.record("a changed list answered not modified")
                    return
                }
                #expect(changed.etag != list.etag && changed.product("pro")?.content.count == 2)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func submissionsCustomersAliasesAndRestoreAnswerTyped(_ database: TestDatabase)
        async throws
    {
        try await ClientFixture.run(database: database) { fixture in
            try await fixture.serve { url in
                let client = fixture.client(url)
                let store = fixture.storefront()
                let pro = try await fixture.buy("pro")
                // A guest buys on this device, waiting for Apple's confirmation.
                let answer = try await client.submit(
                    .signedTransaction(try #require(pro.signedTransaction)),
                    customerId: "device-6F1C",
                    idempotencyKey: "k-1",
                    wait: 10
                )
                #expect(answer.submission.state == .confirmed && answer.submission.state.isSettled)
                #expect(answer.customer.entitlements.map(\.id) == ["pro"])
                #expect(try await client.submission(id: answer.submission.id).state == .confirmed)
                // The guest signs in: the purchase moves to the account.
                let alice = try await client.link(guestId: "device-6F1C", to: "alice")
                #expect(alice.customerId == "alice" && alice.purchases.map(\.productId) == ["pro"])
                #expect(try await client.customer("alice").entitlements.map(\.id) == ["pro"])

                // A restore with the app receipt answers what alice can have back.
                let receipt = try #require(try await store.appReceipt())
                let restored = try await client.restore(customerId: "alice", evidence: .appReceipt(receipt))
                #expect(restored.restored.map(\.productId) == ["pro"])
            }
        }
    }

    @Test(arguments: TestDatabase.all) func failuresSayWhetherToRetryLaterOrNot(_ database: TestDatabase) async throws {
        try await ClientFixture.run(database: database) { fixture in
            // Nothing listening: unreachable, try again later.
            let dead = fixture.client(try await ClientFixture.deadURL())
            await #expect {
                try await dead.products()
            } throws: { error in
                let error = error as? TillClientError
                return error?.kind == .unreachable && error?.isTemporary == true && error?.status == nil
            }
            try await fixture.serve { url in
                // A wrong key: refused, with the server's code, but not a verdict on any submission.
                let stranger = TillServerClient(baseURL: url, appKey: "tk_wrong", session: fixture.http)
                await #expect {
                    try await stranger.products()
                } throws: { error in
                    let error = error as? TillClientError
                    return error?.kind == .refused && error?.status == 401 && error?.code == "unauthorized"
                        && error?.isTemporary == false && error?.isPermanentRefusal == false
                }
                // A malformed submission: refused for good.
                await #expect {
                    try await fixture.client(url).submit(.signedTransaction("x"), customerId: "")
                } throws: { error in
                    let error = error as? TillClientError
                    return error?.status == 400 && error?.code == "invalidCustomerId"
                        && error?.isPermanentRefusal == true
                }
            }
            // The store slow beyond the time limit: timed out, try again later.
            fixture.simulator.faults.add(try FaultRule(parsing: "sandbox:storeKit:latency=2,times=1"))
            let impatient = SimulatorStorefront(
                baseURL: fixture.simulatorURL,
                deviceId: fixture.device.id,
                bundleId: ClientFixture.bundleId,
                timeout: 0.3,
                session: fixture.http
            )
            await #expect {
                try await impatient.products(["pro"])
            } throws: { error in
                let error = error as? TillClientError
                return error?.kind == .timedOut && error?.isTemporary == true
            }
            // The store down (503): the server's fault, try again later. The latency rule goes first: on a loaded
            // machine the timed-out request may not have reached the store (and used the rule up) within 0.3 s.
            fixture.simulator.faults.removeAll()
            // A store client with the usual time limit: 0.3 s is no limit to judge a 503 by on a loaded runner.
            let patient = SimulatorStorefront(
                baseURL: fixture.simulatorURL,
                deviceId: fixture.device.id,
                bundleId: ClientFixture.bundleId,
                session: fixture.http
            )
            fixture.simulator.faults.add(try FaultRule(parsing: "sandbox:storeKit:outage=503,times=1"))
            await #expect {
                try await patient.unfinishedTransactions()
            } throws: { error in
                let error = error as? TillClientError
                return error?.kind == .serverFault && error?.status == 503 && error?.isTemporary == true
            }
        }
    }

    @Test(arguments: TestDatabase.all) func theStorefrontLooksProductsUpAndReportsInvalidIds(_ database: TestDatabase)
        async throws
    {
        try await ClientFixture.run(database: database) { fixture in
            let store = fixture.storefront()
            let lookup = try await store.products(["pro", "gems.100", "nope"])
            #expect(lookup.products.map(\.id) == ["pro", "gems.100"])
            #expect(lookup.invalidProductIds == ["nope"])
            let pro = try #require(lookup.products.first)
            #expect(
                pro.displayName == "Pro" && pro.priceInMilliunits == 4990 && pro.currencyCode == "USD"
                    && pro.type == .nonConsumable && pro.displayPrice == "$4.99"
            )
            #expect(pro.price == Decimal(string: "4.99"))
            _ = try await fixture.simulator.appStoreConnect.updateAccount(
                id: fixture.account.id,
                AccountInput(canMakePayments: false)
            )
            #expect(try await !store.canMakePayments())
            // Refused by the store (Screen Time): thrown with StoreKit's code, and the failed entry is finished.
            await #expect(
                throws: StoreError(.purchaseNotAllowed, message: "This account is not allowed to make payments.")
            ) {
                _ = try await store.purchase(Payment(productId: "pro"))
            }
            #expect(try await fixture.unfinished().isEmpty)
            #expect(try await store.appReceipt()?.isEmpty == false)
        }
    }

    @Test(arguments: [
        (400, false, true), (401, false, false), (403, false, false), (404, false, false), (408, true, false),
        (409, false, true), (413, false, true), (422, false, true), (429, true, false),
    ])
    func aRefusalIsPermanentOnlyWhenItJudgesTheRequest(status: Int, temporary: Bool, permanent: Bool) {
        let error = TillClientError(.refused, status: status, message: "")
        #expect(error.isTemporary == temporary && error.isPermanentRefusal == permanent)
    }

    @Test func transportFailuresAndServerFaultsAreTemporary() {
        for kind in [TillClientError.Kind.unreachable, .timedOut, .serverFault, .invalidResponse] {
            let error = TillClientError(kind, status: kind == .serverFault ? 503 : nil, message: "")
            #expect(error.isTemporary && !error.isPermanentRefusal, "\(kind)")
        }
        #expect(!TillClientError(.checksumMismatch, message: "").isTemporary)
    }
}
