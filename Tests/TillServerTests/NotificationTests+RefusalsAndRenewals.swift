import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SQLKit
import Testing
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillAppStore
@testable import TillServer
@testable import TillSimulator

extension NotificationTests {
    @Test(arguments: TestDatabase.all) func unverifiableNotificationsAreRefusedAndNothingIsApplied(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let purchase = try await fixture.buy("premium.monthly")
            try await submit(fixture, purchase, as: "c1")
            let signed = try decodedTransaction(try #require(purchase.signedTransaction))
            let refunded: JWSTransactionDecodedPayload = {
                var copy = signed
                copy.revocationDate = Date()
                copy.revocationReason = .appIssue
                copy.signedDate = Date()
                return copy
            }()

            let mallory = try TestPKI.makeAuthority(kind: .p256, name: "Mallory")
            let forger = try JWSSigner(key: try #require(mallory.leafKey.p256), chain: mallory.chain)
            let simulator = fixture.simulator.signer.jws
            @Sendable func notification(
                _ transactionJWS: String?,
                environment: AppStoreEnvironment = .sandbox,
                type: NotificationType = .refund
            ) -> ResponseBodyV2DecodedPayload {
                ResponseBodyV2DecodedPayload(
                    notificationType: type,
                    notificationUUID: UUID().uuidString.lowercased(),
                    version: "2.0",
                    signedDate: Date(),
                    data: NotificationData(
                        appAppleId: fixture.app.appAppleId,
                        bundleId: ServerFixture.bundleId,
                        environment: environment,
                        signedTransactionInfo: transactionJWS
                    )
                )
            }

            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                // Signed by a key no one trusts, envelope and contents.
                let forged = try forger.sign(notification(try forger.sign(refunded)))
                let answer = try await post(client, forged)
                #expect(answer.0 == 401 && errorCode(answer) == "invalidSignature")
                // A trusted envelope carrying a forged transaction.
                let smuggled = try simulator.sign(notification(try forger.sign(refunded)))
                let smuggledAnswer = try await post(client, smuggled)
                #expect(smuggledAnswer.0 == 401 && errorCode(smuggledAnswer) == "invalidSignature")
                // The simulator's roots are trusted for the sandbox only: its "production" is refused.
                var production = refunded
                production.environment = .production
                let claimed = try simulator.sign(
                    notification(try simulator.sign(production), environment: .production)
                )
                let claimedAnswer = try await post(client, claimed)
                #expect(claimedAnswer.0 == 401 && errorCode(claimedAnswer) == "invalidSignature")
                // A genuine signature over an altered payload.
                let genuine = try simulator.sign(notification(try simulator.sign(signed), type: .didRenew))
                let parts = genuine.split(separator: ".").map(String.init)
                let altered = try AppleJSON.makeEncoder().encode(
                    notification(try simulator.sign(refunded))
                )
                let tampered = [parts[0], Base64.encode(Array(altered), alphabet: .url), parts[2]].joined(
                    separator: "."
                )
                let tamperedAnswer = try await post(client, tampered)
                #expect(tamperedAnswer.0 == 401 && errorCode(tamperedAnswer) == "invalidSignature")
                #expect(try await post(client, "not.a.jws").0 == 401)
                let empty = try await client.execute(
                    uri: "/v1/apple/notifications",
                    method: .post,
                    body: ByteBuffer(string: "{}")
                ) {
                    Int($0.status.code)
                }
                #expect(empty == 400)

                #expect(try await count(fixture, "SELECT COUNT(*) AS n FROM srv_notifications") == 0)
                let customer = try await customer(fixture, "c1")
                #expect(customer.entitlements.map(\.id) == ["premium"])
                #expect(customer.purchases.allSatisfy { $0.revocationDate == nil })
                #expect(try await count(fixture, "SELECT COUNT(*) AS n FROM srv_finance WHERE kind = 'refund'") == 0)

                // The same refund, genuinely signed, is applied: the refusals above were about the signatures.
                let real = try await post(client, try simulator.sign(notification(try simulator.sign(refunded))))
                #expect(real.0 == 200 && real.1["status"] as? String == "applied")
                #expect(try await self.customer(fixture, "c1").entitlements.isEmpty)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func unknownAppsTestsAndRefusedSandboxesAreAnsweredWithoutChangingTheLedger(
        _ database: TestDatabase
    ) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let purchase = try await fixture.buy("premium.monthly")
            try await submit(fixture, purchase, as: "c1")
            let simulator = fixture.simulator.signer.jws
            @Sendable func notification(
                _ type: NotificationType,
                bundleId: String = ServerFixture.bundleId,
                transaction: String?
            )
                -> ResponseBodyV2DecodedPayload
            {
                ResponseBodyV2DecodedPayload(
                    notificationType: type,
                    notificationUUID: UUID().uuidString.lowercased(),
                    version: "2.0",
                    signedDate: Date(),
                    data: NotificationData(
                        bundleId: bundleId,
                        environment: .sandbox,
                        signedTransactionInfo: transaction
                    )
                )
            }
            var refunded = try decodedTransaction(try #require(purchase.signedTransaction))
            refunded.revocationDate = Date()
            refunded.signedDate = Date()
            let refund = try simulator.sign(notification(.refund, transaction: try simulator.sign(refunded)))

            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                let test = try await post(client, try simulator.sign(notification(.test, transaction: nil)))
                #expect(
                    test.0 == 200 && test.1["status"] as? String == "applied"
                        && test.1["outcome"] as? String == "recorded"
                )
                // Not acknowledged, not recorded: Apple's retries can succeed once the app is registered.
                let unknown = try await post(
                    client,
                    try simulator.sign(notification(.test, bundleId: "com.example.other", transaction: nil))
                )
                #expect(unknown.0 == 404 && errorCode(unknown) == "appNotFound")
                #expect(try await count(fixture, "SELECT COUNT(*) AS n FROM srv_notifications") == 1)

                _ = try await fixture.server.catalogue.updateApp(
                    bundleId: ServerFixture.bundleId,
                    ServerAppInput(acceptSandbox: false)
                )
                let refused = try await post(client, refund)
                #expect(refused.0 == 200 && refused.1["status"] as? String == "ignored")
                #expect(refused.1["outcome"] as? String == "sandboxNotAccepted")
                #expect(try await customer(fixture, "c1").purchases.allSatisfy { $0.revocationDate == nil })
                // Recorded all the same: a retry of it stays ignored even after the app accepts the sandbox again.
                _ = try await fixture.server.catalogue.updateApp(
                    bundleId: ServerFixture.bundleId,
                    ServerAppInput(acceptSandbox: true)
                )
                #expect(try await post(client, refund).1["status"] as? String == "duplicate")
                #expect(try await customer(fixture, "c1").purchases.allSatisfy { $0.revocationDate == nil })
            }
        }
    }

    @Test(arguments: TestDatabase.all) func aGracePeriodKeepsAccessAndBillingRetryIsVisible(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database, followSimulatorClock: true) { fixture in
            let purchase = try await fixture.buy("premium.monthly")
            try await submit(fixture, purchase, as: "c1")
            let firstEnd = try #require(try await customer(fixture, "c1").entitlements.first?.expiresDate)
            // 16 days of grace: 160 s with a month of 300 s.
            try await withNotifications(fixture, gracePeriodDays: 16) {
                _ = try await fixture.simulator.appStoreConnect.updateAccount(
                    id: fixture.account.id,
                    AccountInput(paymentFailure: 0)
                )
                _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
                _ = try await delivered(.didFailToRenew, .gracePeriod, fixture)
                var view = try await customer(fixture, "c1")
                var state = try #require(view.subscriptions.first)
                #expect(state.status == "gracePeriod" && state.isInBillingRetryPeriod)
                #expect(state.expirationIntent == 2 && state.expiresDate == firstEnd)
                let graceEnd = try #require(state.gracePeriodExpiresDate)
                #expect(graceEnd > firstEnd)
                // The period is over on the server's clock, yet access continues until the grace period ends.
                #expect(fixture.server.nowMilliseconds > firstEnd)
                #expect(view.entitlements.map(\.id) == ["premium"] && view.entitlements.first?.expiresDate == graceEnd)

                _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 170)
                _ = try await delivered(.gracePeriodExpired, nil, fixture)
                view = try await customer(fixture, "c1")
                state = try #require(view.subscriptions.first)
                #expect(state.status == "billingRetry" && state.isInBillingRetryPeriod)
                #expect(view.entitlements.isEmpty)

                _ = try await fixture.simulator.appStoreConnect.updateAccount(
                    id: fixture.account.id,
                    AccountInput(paymentFailure: -1)
                )
                _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 1)
                let recovered = try await delivered(.didRenew, .billingRecovery, fixture)
                #expect(recovered.outcome == .applied && recovered.customerId == "c1")
                view = try await customer(fixture, "c1")
                state = try #require(view.subscriptions.first)
                #expect(
                    state.status == "active" && !state.isInBillingRetryPeriod && state.gracePeriodExpiresDate == nil
                )
                #expect(view.entitlements.first?.transactionId == recovered.transactionId)
                #expect(try #require(view.entitlements.first?.expiresDate) > fixture.server.nowMilliseconds)
            }
        }
    }

    // MARK: Production (Apple's roots cannot be had in a test: the step after verification)

    @Test(arguments: TestDatabase.all) func productionRenewalsAndRefundsReachTheRevenueReport(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            let server = fixture.server
            let start = server.nowMilliseconds
            // Through the ledger's own writes, which keep the figures the report reads.
            try await server.events.transaction(source: EventSource(kind: ._operator)) { changes in
                let db = changes.db
                try await CustomerStore(database: server.database).ensureCustomer(
                    bundleId: ServerFixture.bundleId,
                    customerId: "p1",
                    at: start,
                    on: db
                )
                // A production purchase, as the ledger posts one after verification (Apple's roots cannot be had in a
                // test).
                try await server.ledger.post(
                    PurchaseTransaction(
                        transactionId: "100",
                        productId: "premium.monthly",
                        bundleId: ServerFixture.bundleId,
                        productType: .autoRenewable,
                        purchaseDate: Date(millisecondsSince1970: start - 1000),
                        expiresDate: Date(millisecondsSince1970: start + 60_000),
                        environment: .production,
                        price: 990,
                        currency: "USD"
                    ),
                    to: "p1",
                    app: fixture.app,
                    product: nil,
                    origin: .submission("s"),
                    confirmed: true,
                    carryingRevocation: false,
                    now: start,
                    in: changes
                )
            }
            var renewal = JWSTransactionDecodedPayload(
                transactionId: "101",
                originalTransactionId: "100",
                bundleId: ServerFixture.bundleId,
                productId: "premium.monthly",
                purchaseDate: Date(millisecondsSince1970: start + 60_000),
                expiresDate: Date(millisecondsSince1970: start + 120_000),
                quantity: 1,
                type: .autoRenewableSubscription,
                inAppOwnershipType: .purchased,
                environment: .production,
                currency: "USD",
                price: 1290
            )
            func verified(_ type: NotificationType, _ transaction: JWSTransactionDecodedPayload) -> VerifiedNotification
            {
                VerifiedNotification(
                    signedPayload: "",
                    payload: ResponseBodyV2DecodedPayload(notificationType: type, signedDate: Date()),
                    uuid: UUID().uuidString,
                    type: type,
                    environment: .production,
                    bundleId: ServerFixture.bundleId,
                    transaction: transaction
                )
            }
            #expect(
                try await server.notifications.receive(verified(.didRenew, renewal), app: fixture.app).status
                    == .applied
            )
            renewal.revocationDate = Date(millisecondsSince1970: start + 90_000)
            renewal.revocationReason = .other
            renewal.revocationType = .refundProrated
            renewal.revocationPercentage = 50_000
            #expect(
                try await server.notifications.receive(verified(.refund, renewal), app: fixture.app).status == .applied
            )

            let report = try await server.figures.revenue(
                bundleId: ServerFixture.bundleId,
                from: 0,
                to: Int64.max,
                groupBy: .currency
            )
            // 9.90 + 12.90 − half of 12.90.
            #expect(report.totals.additionalProperties == ["USD": 990 + 1290 - 645])
            #expect(report.rows.first?.count == 3)
            let customer = try await customer(fixture, "p1")
            #expect(customer.purchases.first { $0.transactionId == "101" }?.revocationReason == .refund)
        }
    }
}
