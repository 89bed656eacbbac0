import Foundation
import Testing
import TillAppStore
import TillContract
import TillCore
import TillHTTPKit
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// One owner for a purchase, whatever arrives first. Two customers of the app, A and B, use devices of one App Store
/// account, and both buy the non-consumable `pro`: the store charges A and hands B the same purchase again, a new
/// transaction with A's `originalTransactionId` (and no notification: nothing was charged). The server learns of the
/// purchase four ways — A's submission, B's submission, Apple's ONE_TIME_CHARGE for A's transaction, and the
/// catch-up's read of Notification History and of the account's Transaction History (which lists B's transaction as
/// soon as B bought it) — and every order of the four must end as the app's restore policy says of the two
/// submissions alone: with `keepWithFirstOwner` the whole purchase is the first submitter's and the other is refused;
/// with `transferToLatest` all of it is the last submitter's.
///
/// `till bench reads` once failed on exactly this (a hundred customers on devices of one account): the catch-up at
/// start read the account's history while customers were being prepared and gave a customer's transaction, bought but
/// not yet submitted, to the purchase's previous customer; that customer's submission was then refused.
@Suite(.sharingTheMachine)
struct OwnershipOrderTests {
    enum Fact: String, CaseIterable, CustomStringConvertible, Sendable {
        case submissionA, submissionB, notification, catchUp
        var description: String { rawValue }
    }

    /// Every order of the four facts.
    static let orders: [[Fact]] = {
        var all: [[Fact]] = []
        func permute(_ rest: [Fact], _ prefix: [Fact]) {
            if rest.isEmpty { all.append(prefix) }
            for (index, fact) in rest.enumerated() {
                var remaining = rest
                remaining.remove(at: index)
                permute(remaining, prefix + [fact])
            }
        }
        permute(Fact.allCases, [])
        return all
    }()

    static let cases: [(RestorePolicy, [Fact])] = [RestorePolicy.keepWithFirstOwner, .transferToLatest].flatMap {
        policy in orders.map { (policy, $0) }
    }

    @Test(arguments: cases) func theSameFactsGiveTheSameOwnerInAnyOrder(_ policy: RestorePolicy, _ order: [Fact])
        async throws
    {
        try await ServerFixture.run(restorePolicy: policy) { fixture in
            let server = fixture.server
            let first = try await fixture.buy("pro")
            let tablet = try await fixture.simulator.appStoreConnect.createDevice(
                accountId: fixture.account.id,
                DeviceInput()
            )
            let second = try await fixture.simulator.payments.addPayment(
                PaymentRequest(deviceId: tablet.id, bundleId: ServerFixture.bundleId, productId: "pro"),
                environment: .sandbox
            )
            let ids = try [#require(first.transactionId), #require(second.transactionId)]
            #expect(second.originalTransactionId == first.originalTransactionId && ids[0] != ids[1])
            let log = try await fixture.simulator.notifications.notificationLog(
                appAppleId: fixture.app.appAppleId ?? 0,
                environment: .sandbox
            )
            let charge = try #require(
                log.first { $0.notificationType == "ONE_TIME_CHARGE" && $0.transactionId == ids[0] }
            )

            var refused: [String] = []
            for fact in order {
                switch fact {
                case .submissionA, .submissionB:
                    let (customer, purchase) = fact == .submissionA ? ("A", first) : ("B", second)
                    do {
                        let submitted = try await server.intake.submit(
                            SubmissionRequest(customerId: customer, signedTransaction: purchase.signedTransaction),
                            app: fixture.app
                        )
                        #expect(try await fixture.settled(submitted).state == .confirmed, "order \(order)")
                    } catch let error as IntakeRefusal where error.reason == .ownedByAnotherCustomer {
                        refused.append(customer)
                    }
                case .notification:
                    _ = try await server.notifications.receiveNotification(signedPayload: charge.signedPayload)
                case .catchUp:
                    _ = try await server.catchUp.run(bundleId: ServerFixture.bundleId)
                }
            }

            // The next periodic catch-up: a history read before anyone owned the purchase had no one to give B's
            // transaction to (nothing is invented), and the purchase's owner gets it now. It moves nothing already owned.
            _ = try await server.catchUp.run(bundleId: ServerFixture.bundleId)

            let submitters = order.filter { $0 == .submissionA || $0 == .submissionB }.map {
                $0 == .submissionA ? "A" : "B"
            }
            let owner = policy == .keepWithFirstOwner ? submitters[0] : submitters[1]
            let other = owner == "A" ? "B" : "A"
            var owners: [String?] = []
            for id in ids {
                owners.append(
                    try await PurchaseStore(database: server.database).transaction(
                        environment: .sandbox,
                        transactionId: id,
                        on: server.database.sql
                    )?
                    .customerId
                )
            }
            func hasPro(_ customer: String) async throws -> Bool {
                try await server.customers.customer(bundleId: ServerFixture.bundleId, customerId: customer)
                    .entitlements.contains { $0.id == "pro" }
            }
            #expect(owners == [owner, owner], "order \(order)")
            let ownerHasPro = try await hasPro(owner)
            let otherHasPro = try await hasPro(other)
            #expect(ownerHasPro && !otherHasPro, "order \(order)")
            #expect(refused == (policy == .keepWithFirstOwner ? [other] : []), "order \(order)")
        }
    }
}
