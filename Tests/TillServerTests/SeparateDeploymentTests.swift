import Foundation
import NIOHTTP1
import Testing
import TillContract
import TillTestSupport

/// Till as a user runs it: `till simulator` and `till serve --mode production`, two processes wired only by the
/// settings docs/configuration.md gives, driven only over HTTP. One at a time: each starts two processes and a
/// database, and a 2-core runner starting a dozen pairs at once spends its time switching between them.
@Suite(
    .sharingTheMachine,
    .serialized,
    .enabled(if: Prerequisite.tillExecutable.shouldRun, Comment(rawValue: Prerequisite.tillExecutable.skipMessage))
)
struct SeparateDeploymentTests {
    /// Issue 15, item 4: development mode supplied the simulator's receipt intermediate in-process; a server
    /// started on its own gets it from `apple.sandbox-roots`, through the file the docs fetch.
    @Test(arguments: TestDatabase.all)
    func anIOS6ReceiptFromASeparateSimulatorIsAcceptedAndConfirmed(_ database: TestDatabase) async throws {
        try await SeparateDeployment.run(database: database) { deployment in
            let payment = try await deployment.buy("pro")
            let receipt = try #require(payment.transactionReceipt)
            let reply = try await deployment.submit("alice", "transactionReceipt", receipt, wait: 60)
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
            #expect(
                Set((x["purchases"] as? [[String: Any]] ?? []).compactMap { $0["productId"] as? String }) == [
                    "gems.100", "pro",
                ]
            )
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

/// Issue 15, items 1, 2, 6, 18: what a rejection takes, what Apple's later word gives back, in any order.
extension SeparateDeploymentTests {
    /// The entitlements and purchases of a customer, reduced to what must not depend on the order of events.
    func state(_ deployment: SeparateDeployment, _ customer: String) async throws -> [String] {
        let view = try await deployment.customer(customer)
        func flag(_ value: Any?) -> String { (value as? Bool).map { $0 ? "true" : "false" } ?? "?" }
        let entitlements = (view["entitlements"] as? [[String: Any]] ?? []).map {
            "entitlement \($0["id"] ?? "?") provisional=\(flag($0["provisional"]))"
        }
        let purchases = (view["purchases"] as? [[String: Any]] ?? []).map {
            "purchase \($0["productId"] ?? "?") confirmed=\(flag($0["confirmed"])) revoked=\($0["revocationDate"] != nil)"
        }
        let balances = (view["balances"] as? [String: Any] ?? [:]).map { "balance \($0.key)=\($0.value)" }
        return (entitlements + purchases + balances).sorted()
    }

    /// Item 1: Apple refusing this server's shared secret (21004) is the operator's configuration, not a forged
    /// purchase: nothing is revoked, the submission waits, and setting the new secret brings it forward at once
    /// (the back-off here is an hour, so only that can confirm it within the test).
    @Test(arguments: TestDatabase.all)
    func aRotatedSharedSecretRevokesNothingAndTheFixConfirmsAtOnce(_ database: TestDatabase) async throws {
        try await SeparateDeployment.run(
            database: database,
            settings: ["TILL_CONFIRMATION_BACKOFF_BASE_SECONDS": "3600"],
            notifications: false
        ) { deployment in
            _ = try await deployment.buy("premium.monthly")
            let receipt = try await deployment.receipt()
            // App Store Connect's secret is rotated; Till still has the old one.
            let rotated = try await SeparateDeployment.expect(
                200,
                deployment.simulator.post("/admin/v1/apps/\(SeparateDeployment.appAppleId)/shared-secret")
            )
            let secret = try #require(rotated.object["sharedSecret"] as? String)
            #expect(secret != deployment.sharedSecret)

            let reply = try await deployment.submit("alice", "receipt", receipt)
            #expect(reply.status == 202, "\(reply)")
            let id = try #require((reply.object["submission"] as? [String: Any])?["id"] as? String)
            var submission: [String: Any] = [:]
            try await deployment.eventually("the first attempt") {
                submission = try await deployment.app.get("/v1/submissions/\(id)").object
                return submission["attempts"] as? Int == 1
            }
            #expect(submission["state"] as? String == "retrying")
            #expect(submission["lastStatus"] as? String == "status 21004")
            #expect(submission["retryCause"] as? String == "configuration")
            // Nothing but this submission may confirm the purchase here: Apple's history, read by a catch-up, would
            // (SeparateDeployment turns the automatic runs off for a deployment without notifications).
            let caughtUp = try await deployment.admin.get("/admin/v1/apps/\(SeparateDeployment.bundleId)/catch-up")
            #expect(caughtUp.status == 404, "no catch-up ran: \(caughtUp)")
            let waiting = try await state(deployment, "alice")
            #expect(
                waiting.contains("entitlement premium provisional=true"),
                "a paying customer keeps access while the operator fixes the secret: \(waiting), \(submission)"
            )

            let patched = try await deployment.admin.send(
                .PATCH,
                "/admin/v1/apps/\(SeparateDeployment.bundleId)",
                ["sharedSecrets": [secret, deployment.sharedSecret]]
            )
            #expect(patched.status == 200, "\(patched)")
            let settled = try await deployment.settled(id, timeout: .seconds(60))
            #expect(settled["state"] as? String == "confirmed", "\(settled)")
            #expect(settled["lastStatus"] as? String == "status 0")
            let alice = try await state(deployment, "alice")
            #expect(alice.contains("entitlement premium provisional=false"), "\(alice)")
            #expect(alice.allSatisfy { !$0.contains("revoked=true") }, "\(alice)")
        }
    }

    /// Item 1: a terminal rejection (21010 here) revokes what the submission granted; a later confirmation by
    /// Apple gives back the entitlement and the credits, whether it comes through verifyReceipt (the receipt sent
    /// again) or the App Store Server API (the StoreKit 2 transaction sent).
    @Test(arguments: ["receipt", "signedTransaction"])
    func aLaterConfirmationGivesBackWhatARejectionTook(_ format: String) async throws {
        try await SeparateDeployment.run(notifications: false) { deployment in
            let pro = try await deployment.buy("pro")
            let gems = try await deployment.buy("gems.100")
            let receipt = try await deployment.receipt()
            try await deployment.fault("production:verifyReceipt:status=21010,times=1")
            let rejected = try await deployment.submit("alice", "receipt", receipt, wait: 60)
            #expect((rejected.object["submission"] as? [String: Any])?["state"] as? String == "rejected", "\(rejected)")
            let taken = try await state(deployment, "alice")
            #expect(taken.contains("purchase pro confirmed=false revoked=true"), "\(taken)")
            #expect(taken.contains("balance gems=0"), "\(taken)")
            #expect(!taken.contains { $0.hasPrefix("entitlement pro") }, "\(taken)")

            if format == "receipt" {
                let again = try await deployment.submit("alice", "receipt", receipt, wait: 60)
                #expect((again.object["submission"] as? [String: Any])?["state"] as? String == "confirmed", "\(again)")
            } else {
                for payment in [pro, gems] {
                    let jws = try #require(payment.signedTransaction)
                    let again = try await deployment.submit("alice", "signedTransaction", jws, wait: 60)
                    #expect(
                        (again.object["submission"] as? [String: Any])?["state"] as? String == "confirmed",
                        "\(again)"
                    )
                }
            }
            let given = try await state(deployment, "alice")
            #expect(given.contains("entitlement pro provisional=false"), "\(given)")
            #expect(given.contains("purchase pro confirmed=true revoked=false"), "\(given)")
            #expect(given.contains("balance gems=100"), "\(given)")
        }
    }

    /// Item 2: Apple's notification of a purchase and a rejection of its receipt give the same state whether the
    /// notification reached the server before the submission or after it.
    @Test func aNotificationBeforeOrAfterTheSubmissionGivesTheSameState() async throws {
        var outcomes: [[String]] = []
        for notificationFirst in [true, false] {
            try await SeparateDeployment.run(notifications: false) { deployment in
                let pro = try await deployment.buy("pro")
                let transaction = try #require(pro.transactionId)
                let receipt = try await deployment.receipt()
                if notificationFirst {
                    let delivered = try await deployment.deliverNotification(
                        "ONE_TIME_CHARGE",
                        transactionId: transaction
                    )
                    #expect(delivered.object["outcome"] as? String == "unmatched", "\(delivered)")
                    try await deployment.fault("production:verifyReceipt:status=21010,times=1")
                    let reply = try await deployment.submit("alice", "receipt", receipt, wait: 60)
                    #expect((reply.object["submission"] as? [String: Any])?["state"] as? String == "rejected")
                } else {
                    try await deployment.fault("production:verifyReceipt:outage=503,times=1")
                    let reply = try await deployment.submit("alice", "receipt", receipt)
                    let id = try #require((reply.object["submission"] as? [String: Any])?["id"] as? String)
                    try await deployment.eventually("the first attempt") {
                        try await deployment.app.get("/v1/submissions/\(id)").object["attempts"] as? Int == 1
                    }
                    let delivered = try await deployment.deliverNotification(
                        "ONE_TIME_CHARGE",
                        transactionId: transaction
                    )
                    #expect(delivered.object["outcome"] as? String == "applied", "\(delivered)")
                    try await deployment.fault("production:verifyReceipt:status=21010,times=1")
                    #expect(try await deployment.settled(id)["state"] as? String == "rejected")
                }
                outcomes.append(try await state(deployment, "alice"))
            }
        }
        #expect(outcomes.count == 2 && outcomes[0] == outcomes[1], "\(outcomes)")
        #expect(outcomes.first?.contains("entitlement pro provisional=false") == true, "\(outcomes)")
    }

    /// Item 6: replaying someone else's genuine JWS is refused and costs no call to Apple, nor a place in the queue.
    @Test func aRefusedReplayCallsAppleForNothing() async throws {
        try await SeparateDeployment.run(notifications: false) { deployment in
            let jws = try #require(try await deployment.buy("pro").signedTransaction)
            let first = try await deployment.submit("alice", "signedTransaction", jws, wait: 60)
            #expect((first.object["submission"] as? [String: Any])?["state"] as? String == "confirmed")
            let calls = try await deployment.counter("till_apple_calls_total", #"endpoint="serverAPI""#)
            #expect(calls == 1)
            for _ in 0..<5 {
                let replay = try await deployment.submit("mallory", "signedTransaction", jws)
                #expect(replay.status == 409 && replay.code == "ownedByAnotherCustomer", "\(replay)")
            }
            for state in ["pending", "retrying"] {
                let queued = try await deployment.admin.get("/admin/v1/submissions?state=\(state)")
                #expect(queued.status == 200)
                #expect((queued.object["items"] as? [Any])?.isEmpty == true, "\(state): \(queued)")
            }
            // Whatever the worker does next, it has nothing of mallory's to ask about.
            let rejected = try await deployment.admin.get("/admin/v1/submissions?state=rejected")
            #expect((rejected.object["items"] as? [[String: Any]])?.count == 5, "\(rejected)")
            #expect(try await deployment.counter("till_apple_calls_total", #"endpoint="serverAPI""#) == calls)
        }
    }

    /// Item 18: each call to Apple is counted with its environment and status, so production-first shows: a
    /// sandbox receipt is sent to production (21007), then to the sandbox (0).
    @Test func eachCallToAppleIsCountedWithItsEnvironmentAndStatus() async throws {
        try await SeparateDeployment.run(notifications: false) { deployment in
            _ = try await deployment.buy("pro")
            let reply = try await deployment.submit("alice", "receipt", try await deployment.receipt(), wait: 60)
            #expect((reply.object["submission"] as? [String: Any])?["state"] as? String == "confirmed")
            let production = try await deployment.counter(
                "till_apple_calls_total",
                #"endpoint="verifyReceipt""#,
                #"environment="Production""#,
                #"status="status 21007""#
            )
            let sandbox = try await deployment.counter(
                "till_apple_calls_total",
                #"endpoint="verifyReceipt""#,
                #"environment="Sandbox""#,
                #"status="status 0""#
            )
            let metrics = try await deployment.metrics()
            #expect(production == 1 && sandbox == 1, "\(metrics)")
        }
    }
}
