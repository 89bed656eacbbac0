import Foundation
import NIOHTTP1
import Testing
import TillTestSupport

/// Till as a user runs it: `till simulator` and `till serve --mode production`, two processes wired only by the
/// settings docs/configuration.md gives, driven only over HTTP.
@Suite(.enabled(if: Prerequisite.tillExecutable.shouldRun, Comment(rawValue: Prerequisite.tillExecutable.skipMessage)))
struct SeparateDeploymentTests {
    /// Issue 15, item 4: development mode supplied the simulator's receipt intermediate in-process; a server
    /// started on its own gets it from `apple.sandbox-roots`, through the file the docs fetch.
    @Test(arguments: TestDatabase.all)
    func anIOS6ReceiptFromASeparateSimulatorIsAcceptedAndConfirmed(_ database: TestDatabase) async throws {
        try await SeparateDeployment.run(database: database) { deployment in
            let payment = try await deployment.buy("pro")
            let receipt = try #require(payment.transactionReceipt)
            let reply = try await deployment.submit("alice", "transactionReceipt", receipt, wait: 30)
            #expect(reply.status == 200, "\(reply)")
            let submission = reply.object["submission"] as? [String: Any]
            #expect(submission?["state"] as? String == "confirmed")
            #expect(submission?["kind"] as? String == "transactionReceipt")
            let entitlements = (reply.object["customer"] as? [String: Any])?["entitlements"] as? [[String: Any]]
            #expect(entitlements?.first?["id"] as? String == "pro")
            #expect(entitlements?.first?["provisional"] as? Bool == false)
        }
    }
}

extension SeparateDeploymentTests {
    /// Issue 15, item 3: a guest id belongs to one account. Linking it to a second account is refused, and neither
    /// account sees the other's purchases or balance.
    @Test(arguments: TestDatabase.all)
    func aGuestLinkedToOneAccountIsNeverLinkedToAnotherAndAccountsNeverMerge(_ database: TestDatabase) async throws {
        try await SeparateDeployment.run(database: database) { deployment in
            let gems = try #require(try await deployment.buy("gems.100").signedTransaction)
            let pro = try #require(try await deployment.buy("pro").signedTransaction)
            #expect(try await deployment.submit("acct-x", "signedTransaction", gems).status == 202)
            #expect(try await deployment.submit("device-1", "signedTransaction", pro).status == 202)

            let first = try await deployment.app.post("/v1/customers/acct-x/aliases", ["customerId": "device-1"])
            #expect(first.status == 200, "\(first)")
            #expect(first.object["balances"] as? [String: Int] == ["gems": 100])
            let again = try await deployment.app.post("/v1/customers/acct-x/aliases", ["customerId": "device-1"])
            #expect(again.status == 200, "linking the same guest to the same account again changes nothing")

            let elsewhere = try await deployment.app.post("/v1/customers/acct-y/aliases", ["customerId": "device-1"])
            #expect(elsewhere.status == 409 && elsewhere.code == "guestLinkedElsewhere", "\(elsewhere)")
            // An account is never linked as a guest of another, and a guest id is not an account to link to.
            let merge = try await deployment.app.post("/v1/customers/acct-y/aliases", ["customerId": "acct-x"])
            #expect(merge.status == 409 && merge.code == "guestIsAnAccount", "\(merge)")
            let toGuest = try await deployment.app.post("/v1/customers/device-1/aliases", ["customerId": "device-2"])
            #expect(toGuest.status == 409 && toGuest.code == "accountIsAGuest", "\(toGuest)")

            let x = try await deployment.customer("acct-x")
            let y = try await deployment.customer("acct-y")
            #expect(x["customerId"] as? String == "acct-x")
            #expect(Set((x["purchases"] as? [[String: Any]] ?? []).compactMap { $0["productId"] as? String }) == ["gems.100", "pro"])
            #expect(x["balances"] as? [String: Int] == ["gems": 100])
            #expect((y["purchases"] as? [[String: Any]])?.isEmpty == true)
            #expect((y["balances"] as? [String: Int])?.isEmpty == true)
            let snapshot = try await deployment.app.get("/v1/customers/acct-x/snapshot")
            #expect((snapshot.object["snapshot"] as? [String: Any])?["owner"] as? String == "acct-x")
        }
    }

    /// Issue 15, item 5: a request id belongs to the customer it was sent for; a resend with other content is
    /// refused, never answered as if it had been spent.
    @Test(arguments: TestDatabase.all)
    func aDebitsRequestIdIsTheCustomersAndAChangedResendIsRefused(_ database: TestDatabase) async throws {
        try await SeparateDeployment.run(database: database) { deployment in
            for customer in ["alice", "bob"] {
                let gems = try #require(try await deployment.buy("gems.100").signedTransaction)
                #expect(try await deployment.submit(customer, "signedTransaction", gems).status == 202)
            }
            let order: [String: Any] = ["credit": "gems", "amount": 30, "requestId": "order-17"]
            let alice = try await deployment.app.post("/v1/customers/alice/debits", order)
            #expect(alice.status == 200 && alice.object["balances"] as? [String: Int] == ["gems": 70], "\(alice)")
            let resent = try await deployment.app.post("/v1/customers/alice/debits", order)
            #expect(resent.status == 200 && resent.object["balances"] as? [String: Int] == ["gems": 70], "\(resent)")

            // Bob numbers his orders from 1 too: his order-17 is his own, and is spent.
            let bob = try await deployment.app.post("/v1/customers/bob/debits", order)
            #expect(bob.status == 200 && bob.object["balances"] as? [String: Int] == ["gems": 70], "\(bob)")

            for changed: [String: Any] in [
                ["credit": "diamonds", "amount": 1000, "requestId": "order-17"],
                ["credit": "gems", "amount": 31, "requestId": "order-17"],
            ] {
                let reply = try await deployment.app.post("/v1/customers/alice/debits", changed)
                #expect(reply.status == 409 && reply.code == "requestIdReused", "\(reply)")
            }
            #expect(try await deployment.customer("alice")["balances"] as? [String: Int] == ["gems": 70])
            #expect(try await deployment.customer("bob")["balances"] as? [String: Int] == ["gems": 70])
        }
    }

    /// Issue 15, item 7: every customer id entering the server passes one check (1–200 characters once trimmed),
    /// in a body or a path, a submission's or a guest's.
    @Test func everyCustomerIdIsCheckedTheSameWay() async throws {
        try await SeparateDeployment.run { deployment in
            let long = String(repeating: "x", count: 10_000)
            let alias = try await deployment.app.post("/v1/customers/mallory/aliases", ["customerId": long])
            #expect(alias.status == 400 && alias.code == "invalidCustomerId", "\(alias)")
            let blank = try await deployment.app.post("/v1/customers/mallory/aliases", ["customerId": "   "])
            #expect(blank.status == 400 && blank.code == "invalidCustomerId", "\(blank)")
            let submission = try await deployment.submit(long, "signedTransaction", "a.b.c")
            #expect(submission.status == 400 && submission.code == "invalidCustomerId", "\(submission)")
            for path in [
                "/v1/customers/\(String(repeating: "y", count: 201))", "/v1/customers/%20%20/snapshot",
            ] {
                let reply = try await deployment.app.get(path)
                #expect(reply.status == 400 && reply.code == "invalidCustomerId", "\(path): \(reply)")
            }
            let debit = try await deployment.app.post(
                "/v1/customers/\(String(repeating: "z", count: 201))/debits",
                ["credit": "gems", "amount": 1, "requestId": "r-1"]
            )
            #expect(debit.status == 400 && debit.code == "invalidCustomerId", "\(debit)")
            // 200 characters is a valid id.
            let fine = try await deployment.app.post(
                "/v1/customers/mallory/aliases",
                ["customerId": String(repeating: "g", count: 200)]
            )
            #expect(fine.status == 200, "\(fine)")
        }
    }
}
