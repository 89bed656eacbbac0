import Foundation
import Testing
import TillContract
import TillCore
import TillFormats
import TillTestSupport

@testable import TillClient
@testable import TillServer
@testable import TillSimulator

/// The outcomes StoreKit 1 and StoreKit 2 share, each scenario run on both: the same coordinator over
/// ``FakeStoreKit1`` or ``FakeStoreKit2`` (``StoreKitUnderTest``), each playing its StoreKit over the simulator's
/// device, so what the server verifies is real (an app receipt, a signed transaction). Where the two StoreKits tell the
/// app different things, the scenario says what each does. What only one of them has is in `StoreKit1OutcomeTests`
/// and `StoreKit2OutcomeTests`.
@Suite(.sharingTheMachine, .timeLimit(.minutes(10)))
struct StoreKitOutcomeTests {
    @Test(arguments: StoreKitVersion.allCases)
    func aPurchaseIsVerifiedRecordedDeliveredAndOnlyThenFinished(_ version: StoreKitVersion) async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                let finishedAtDelivery = Counter()
                let app = try fixture.app(on: version, url) { transaction in
                    // When StoreKit is told to finish, the server has the purchase and the manual is on disk.
                    let customer = try await fixture.customer("alice")
                    if customer.purchases.contains(where: { $0.transactionId == transaction.transactionId }) {
                        finishedAtDelivery.add(transaction.productId)
                    }
                }
                let token = UUID()
                let outcome = try await app.coordinator.purchase(Payment(productId: "pro", appAccountToken: token))
                guard case .delivered(let delivery) = outcome else {
                    Issue.record("expected delivered, got \(outcome)")
                    return
                }
                #expect(delivery.transaction.appAccountToken == token)
                #expect(delivery.finished && finishedAtDelivery.all == ["pro"])
                #expect(delivery.files.map(\.name) == ["manual.pdf"])
                switch app.kit {
                case .storeKit1(let kit):
                    // The token travels as the payment's `applicationUsername`; the server reads the app receipt.
                    #expect(kit.added.first?.applicationUsername == token.uuidString.lowercased())
                    #expect(delivery.transaction.signedTransaction == nil)
                    #expect(delivery.submission?.kind == .appReceipt)
                    #expect(kit.finished == [delivery.transaction.id], "the queue's entry, finished once")
                case .storeKit2(let kit):
                    #expect(kit.purchaseOptions == [[.appAccountToken(token)]])
                    // StoreKit 1's transactions do not say the product's type; StoreKit 2's do.
                    #expect(delivery.transaction.productType == .nonConsumable)
                    #expect(delivery.submission?.kind == .signedTransaction)
                    #expect(kit.finished == [delivery.transaction.transactionId], "finished once")
                }
                #expect(await app.isEntitled(to: "pro"))
                #expect(try await fixture.unfinished().isEmpty)
            }
        }
    }

    /// Ask to Buy: the purchase is pending, and once the parent approves it, the coordinator hears of it (StoreKit 1's
    /// queue observer, StoreKit 2's `Transaction.updates`) and delivers it.
    @Test(arguments: StoreKitVersion.allCases)
    func askToBuyIsPendingThenTheApprovedPurchaseIsDelivered(_ version: StoreKitVersion) async throws {
        try await ClientFixture.run { fixture in
            try await fixture.turnOnAskToBuy()
            try await fixture.serve { url in
                let app = try fixture.app(on: version, url)
                let paymentId = try await Self.pendingPurchase(of: "pro", app, fixture)
                let delivered = try await Self.event(app.coordinator, matching: { $0.kind == "delivered" }) {
                    try await app.decide(paymentId, approve: true, fixture: fixture)
                }
                #expect(delivered?.productId == "pro")
                #expect(await app.isEntitled(to: "pro"))
                #expect(try await fixture.unfinished().isEmpty)
            }
        }
    }

    /// The parent declines: nothing is granted. StoreKit 1's observer hears a failed transaction, reported and
    /// finished; StoreKit 2 reports no transaction at all.
    @Test(arguments: StoreKitVersion.allCases)
    func aDeclinedAskToBuyGrantsNothing(_ version: StoreKitVersion) async throws {
        try await ClientFixture.run { fixture in
            try await fixture.turnOnAskToBuy()
            try await fixture.serve { url in
                let app = try fixture.app(on: version, url)
                let paymentId = try await Self.pendingPurchase(of: "pro", app, fixture)
                switch version {
                case .storeKit1:
                    let declined = try await Self.event(app.coordinator, matching: { $0.kind == "failed" }) {
                        try await app.decide(paymentId, approve: false, fixture: fixture)
                    }
                    #expect(declined?.productId == "pro")
                    #expect(try await fixture.unfinished().isEmpty)
                case .storeKit2:
                    try await app.decide(paymentId, approve: false, fixture: fixture)
                    #expect(await app.coordinator.handleUnfinished().isEmpty)
                }
                #expect(try await fixture.customer("alice").purchases.isEmpty)
                #expect(await !app.isEntitled(to: "pro"))
            }
        }
    }

    /// The store charged while the app was not running (killed after the payment sheet): at launch StoreKit hands the
    /// transaction back (the payment queue, `Transaction.unfinished`), and it is delivered and finished.
    @Test(arguments: StoreKitVersion.allCases)
    func anUnfinishedTransactionIsDeliveredAtLaunch(_ version: StoreKitVersion) async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                let bought = try await fixture.buy("gems.100")
                let launch = try await fixture.app(on: version, url).coordinator.start()
                guard case .delivered(let delivery)? = launch.transactions.first, launch.transactions.count == 1 else {
                    Issue.record("expected one delivery at launch, got \(launch.transactions)")
                    return
                }
                #expect(delivery.transaction.transactionId == bought.transactionId && delivery.finished)
                #expect(launch.snapshot?.balance("gems") == 100)
                #expect(try await fixture.unfinished().isEmpty)
            }
        }
    }

    /// "Restore Purchases" on a second device of the account delivers what the customer owns (the consumable
    /// aside). StoreKit 1 restores transactions, each finished; StoreKit 2 syncs and then reads the current
    /// entitlements, which it finished long ago. A restore the store refuses is a failed restore.
    @Test(arguments: StoreKitVersion.allCases)
    func restoreOnASecondDeviceDeliversWhatTheCustomerOwns(_ version: StoreKitVersion) async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                let phone = try fixture.app(on: version, url)
                for product in ["pro", "premium.monthly", "gems.100"] {
                    guard case .delivered = try await phone.coordinator.purchase(Payment(productId: product)) else {
                        Issue.record("\(product) was not delivered")
                        return
                    }
                }
                let tablet = try await fixture.simulator.appStoreConnect.createDevice(
                    accountId: fixture.account.id,
                    DeviceInput(name: "iPad")
                )
                let second = try fixture.app(on: version, url, device: tablet, folder: "tablet")
                guard case .completed(let deliveries) = await second.coordinator.restore() else {
                    Issue.record("expected completed")
                    return
                }
                #expect(Set(deliveries.map(\.transaction.productId)) == ["pro", "premium.monthly"])
                #expect(deliveries.allSatisfy { $0.transaction.state == .restored })
                switch second.kit {
                case .storeKit1: #expect(deliveries.allSatisfy { $0.finished })
                case .storeKit2(let kit): #expect(deliveries.allSatisfy { !$0.finished } && kit.finished.isEmpty)
                }
                #expect(await second.isEntitled(to: "pro"))
                #expect(await second.isEntitled(to: "premium"))
                #expect(try await fixture.unfinished(device: tablet).isEmpty)
                let refusal: StoreError
                switch second.kit {
                case .storeKit1(let kit):
                    kit.failRestore(code: 0, message: "Cannot connect to the App Store.")
                    refusal = StoreError(.unknown, message: "Cannot connect to the App Store.")
                case .storeKit2(let kit):
                    refusal = StoreError(.userCancelled, message: "the customer closed the sign-in sheet")
                    kit.failSync(refusal)
                }
                #expect(await second.coordinator.restore() == .failed(RestoreFailure(storeError: refusal)))
                if case .storeKit2(let kit) = second.kit {
                    // The customer signs in after all: the next restore goes through.
                    kit.failSync(nil)
                    guard case .completed = await second.coordinator.restore() else {
                        Issue.record("expected completed after the sync came back")
                        return
                    }
                }
            }
        }
    }

    // MARK: Helpers of the outcome suites

    /// Buys `productId` while Ask to Buy is on: the outcome is pending and nothing is granted; answers the id of the
    /// payment that waits for the parent.
    static func pendingPurchase(of productId: String, _ app: StoreKitUnderTest, _ fixture: ClientFixture)
        async throws -> String
    {
        let outcome = try await app.coordinator.purchase(Payment(productId: productId))
        guard case .pending(let pending) = outcome else { throw NotPending(outcome: outcome) }
        #expect(pending.productId == productId)
        #expect(try await fixture.customer("alice").purchases.isEmpty)
        let entry = try #require(try await fixture.unfinished().first { $0.productId == productId })
        return try #require(entry.paymentId)
    }

    /// The first event `matches` accepts while the coordinator runs its background work (`run`) and `act` happens.
    static func event(
        _ coordinator: any PurchaseEngine,
        matching matches: @escaping @Sendable (PurchaseOutcome) -> Bool,
        after act: () async throws -> Void
    ) async throws -> PurchaseOutcome? {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await coordinator.run(every: 60) }
            try await act()
            let event = await next(coordinator.events, matches)
            group.cancelAll()
            return event
        }
    }

    /// The next event among `events` whose outcome `matches`, within a minute.
    static func next(
        _ events: AsyncStream<PurchaseEvent>,
        _ matches: @escaping @Sendable (PurchaseOutcome) -> Bool
    ) async -> PurchaseOutcome? {
        await withTaskGroup(of: PurchaseOutcome?.self) { group in
            group.addTask {
                for await event in events where matches(event.outcome) { return event.outcome }
                return nil
            }
            group.addTask {
                try? await Task.sleep(nanoseconds: 60_000_000_000)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// Polls `body` until it answers (at most a minute: a loaded machine is slow, not wrong).
    static func waitFor<T>(_ body: () async throws -> T?) async throws -> T {
        for _ in 0..<600 {
            if let value = try await body() { return value }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        throw Killed()
    }
}

/// A purchase made while Ask to Buy is on did not wait for the parent.
struct NotPending: Error, CustomStringConvertible {
    var outcome: PurchaseOutcome
    var description: String { "expected pending, got \(outcome)" }
}

/// Which StoreKit a shared outcome scenario runs on.
enum StoreKitVersion: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case storeKit1
    case storeKit2

    var testDescription: String { self == .storeKit1 ? "StoreKit 1" : "StoreKit 2" }
}

/// An app's coordinator over one StoreKit's fake, and what a scenario does on that StoreKit's side.
struct StoreKitUnderTest: Sendable {
    enum Kit: Sendable {
        case storeKit1(FakeStoreKit1)
        case storeKit2(FakeStoreKit2)
    }

    let kit: Kit
    /// The coordinator, whatever its storefront's type.
    let coordinator: any PurchaseEngine

    func isEntitled(to entitlement: String) async -> Bool {
        await coordinator.entitlements.isEntitled(to: entitlement)
    }

    /// A parent decides on a payment that waits for Ask to Buy, and StoreKit tells the app as it would: StoreKit 1's
    /// queue observer hears the entry purchased or failed; StoreKit 2 hands an approved purchase to
    /// `Transaction.updates` (once the coordinator listens) and says nothing of a declined one.
    func decide(_ paymentId: String, approve: Bool, fixture: ClientFixture) async throws {
        switch kit {
        case .storeKit1(let kit):
            try await kit.decide(paymentId: paymentId, approve: approve)
        case .storeKit2(let kit):
            _ = try await fixture.simulator.payments.resolveDeferredPayment(id: paymentId, approve: approve)
            guard approve else { return }
            let approved = try #require(await kit.unfinished().first)
            while !kit.isObserved { try await Task.sleep(nanoseconds: 10_000_000) }
            kit.emit(approved.value)
        }
    }
}

extension ClientFixture {
    /// The app on `version` of StoreKit, on a device of the tester (the phone by default), its files in `folder`;
    /// `beforeFinish` runs before each finish.
    func app(
        on version: StoreKitVersion,
        _ url: String,
        device: SimDevice? = nil,
        folder: String = "device-1",
        beforeFinish: @escaping @Sendable (StoreTransaction) async throws -> Void = { _ in }
    ) throws -> StoreKitUnderTest {
        switch version {
        case .storeKit1:
            let kit = storeKit1(device: device)
            let store = ObservedStorefront(StoreKit1Storefront(kit: kit), beforeFinish: beforeFinish)
            return StoreKitUnderTest(
                kit: .storeKit1(kit),
                coordinator: try coordinator(url, folder: folder, store: store)
            )
        case .storeKit2:
            let kit = storeKit2(device: device)
            let store = ObservedStorefront(StoreKit2Storefront(kit: kit), beforeFinish: beforeFinish)
            return StoreKitUnderTest(
                kit: .storeKit2(kit),
                coordinator: try coordinator(url, folder: folder, store: store)
            )
        }
    }

    /// The promotional offer `loyal` on `premium.monthly` (three months paid up front), in the store and in the
    /// server's catalogue, for current or lapsed subscribers.
    func offerLoyal() async throws {
        try await createLoyalOfferInTheStore()
        _ = try await server.offers.putOffer(
            bundleId: Self.bundleId,
            productId: "premium.monthly",
            offerIdentifier: "loyal",
            eligibility: .currentOrLapsedSubscribers
        )
    }

    /// The promotional offer `loyal` on `premium.monthly`, in the store alone.
    func createLoyalOfferInTheStore() async throws {
        _ = try await simulator.offers.createOffer(
            appAppleId: 1_234_567_890,
            productId: "premium.monthly",
            OfferInput(
                kind: .promotional,
                offerIdentifier: "loyal",
                discountType: .payUpFront,
                duration: "P3M",
                price: 1990
            )
        )
    }

    /// Ask to Buy for the tester's account: each payment waits for a parent's decision.
    func turnOnAskToBuy() async throws {
        _ = try await simulator.appStoreConnect.updateAccount(id: account.id, AccountInput(askToBuy: true))
    }
}
