import Foundation
import Testing
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillTestSupport

@testable import TillClient
@testable import TillServer
@testable import TillSimulator

/// The outcomes only StoreKit 2 has, through the storefront's generic logic (``StoreKit2Storefront``) and the
/// coordinator, on Linux: StoreKit 2 is played by ``FakeStoreKit2`` over the simulator's device, so the JWS the server
/// verifies is real; the test scripts what StoreKit decides. The outcomes both StoreKits share are in
/// `StoreKitOutcomeTests`, run on each.
@Suite(.sharingTheMachine, .timeLimit(.minutes(10)))
struct StoreKit2OutcomeTests {
    typealias Coordinator = PurchaseCoordinator<StoreKit2Storefront<FakeStoreKit2>>

    @Test func aCancelledPaymentSheetIsUserCancelledAndNothingIsSubmittedOrFinished() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                let kit = fixture.storeKit2()
                kit.script(.userCancelled)
                let coordinator = try fixture.coordinator(url, store: StoreKit2Storefront(kit: kit))
                #expect(try await coordinator.purchase(productId: "pro") == .userCancelled(productId: "pro"))
                #expect(kit.finished.isEmpty)
                #expect(await coordinator.outbox.pending.isEmpty)
                #expect(try await fixture.customer("alice").purchases.isEmpty)
            }
        }
    }

    /// Each refusal StoreKit 2 throws (`StoreKitError`, `Product.PurchaseError`) is a failure with its code; a thrown
    /// `userCancelled` (StoreKit 2 throws it from sign-in sheets) is a cancellation.
    @Test func everyStoreKit2ErrorIsReportedWithItsCodeAndNothingIsCharged() async throws {
        try await ClientFixture.run { fixture in
            let kit = fixture.storeKit2()
            let coordinator = try fixture.coordinator(
                try await ClientFixture.deadURL(),
                store: StoreKit2Storefront(kit: kit)
            )
            let codes: [StoreError.Code] = [
                .unknown, .networkError, .systemError, .notAvailableInStorefront, .notEntitled, .unsupported,
                .invalidQuantity, .productUnavailable, .purchaseNotAllowed, .ineligibleForOffer,
                .invalidOfferIdentifier,
                .invalidOfferPrice, .invalidOfferSignature, .missingOfferParameters,
            ]
            for code in codes {
                let error = StoreError(code, message: "scripted \(code)")
                kit.script(.refuse(error))
                #expect(try await coordinator.purchase(productId: "pro") == .failed(productId: "pro", error), "\(code)")
            }
            kit.script(.refuse(StoreError(.userCancelled, message: "the customer closed the sign-in sheet")))
            #expect(try await coordinator.purchase(productId: "pro") == .userCancelled(productId: "pro"))
            #expect(kit.finished.isEmpty)
            #expect(await coordinator.outbox.pending.isEmpty)
        }
    }

    @Test func anUnverifiedTransactionIsReportedAndNeverDeliveredOrFinished() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                let kit = fixture.storeKit2()
                kit.script(.unverified(StoreVerificationError(.invalidSignature, message: "scripted")))
                let coordinator = try fixture.coordinator(url, store: StoreKit2Storefront(kit: kit))
                let outcome = try await coordinator.purchase(productId: "pro")
                guard case .unverified(let transaction, let error) = outcome else {
                    Issue.record("expected unverified, got \(outcome)")
                    return
                }
                #expect(transaction.productId == "pro" && error.reason == .invalidSignature)
                #expect(kit.finished.isEmpty)
                #expect(try await fixture.customer("alice").purchases.isEmpty)
                #expect(await coordinator.outbox.pending.isEmpty)
                #expect(try await fixture.unfinished().count == 1)
                #expect(await !coordinator.isEntitled(to: "pro"))
            }
        }
    }

    /// Apple refunds a purchase: StoreKit 2 hands the revoked transaction to `Transaction.updates`; the server
    /// records the revocation, and the snapshot no longer grants it.
    @Test func aRefundArrivesThroughTheUpdatesAndTheSnapshotTakesThePurchaseBack() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                let kit = fixture.storeKit2()
                let coordinator = try fixture.coordinator(url, store: StoreKit2Storefront(kit: kit))
                guard case .delivered(let bought) = try await coordinator.purchase(productId: "pro") else {
                    Issue.record("pro was not delivered")
                    return
                }
                _ = try await fixture.simulator.subscriptions.refund(
                    transactionId: bought.transaction.transactionId,
                    reason: 0
                )
                let revoked = try #require(
                    try await fixture.history().first { $0.transactionId == bought.transaction.transactionId }
                )
                #expect(revoked.revocationDate != nil && revoked.revocationReason == .other)
                let outcome = try await Self.throughTheUpdates(coordinator, kit, revoked)
                guard case .delivered(let delivery)? = outcome else {
                    Issue.record("expected the revocation recorded, got \(outcome)")
                    return
                }
                #expect(delivery.transaction.isRevoked && delivery.files.isEmpty)
                #expect(await !coordinator.isEntitled(to: "pro"))
                #expect(try await fixture.customer("alice").purchases.first?.revocationDate != nil)
            }
        }
    }

    /// The customer upgrades within a subscription group: the new subscription is delivered, and the replaced one,
    /// which StoreKit 2 reports upgraded, is recorded as such.
    @Test func anUpgradeDeliversTheNewSubscriptionAndRecordsTheUpgradedOne() async throws {
        try await ClientFixture.run { fixture in
            _ = try await fixture.simulator.appStoreConnect.createProduct(
                appAppleId: 1_234_567_890,
                ProductInput(
                    productId: "basic.monthly",
                    type: .autoRenewable,
                    subscriptionGroup: "premium",
                    subscriptionPeriod: .oneMonth,
                    groupLevel: 2,
                    price: 490,
                    title: "Basic"
                )
            )
            _ = try await fixture.server.catalogue.putProduct(
                bundleId: ClientFixture.bundleId,
                productId: "basic.monthly",
                CatalogProductInput(type: .autoRenewable, entitlements: ["basic"], subscriptionGroup: "premium")
            )
            try await fixture.serve { url in
                let kit = fixture.storeKit2()
                let coordinator = try fixture.coordinator(url, store: StoreKit2Storefront(kit: kit))
                guard case .delivered(let basic) = try await coordinator.purchase(productId: "basic.monthly") else {
                    Issue.record("basic was not delivered")
                    return
                }
                guard case .delivered = try await coordinator.purchase(productId: "premium.monthly") else {
                    Issue.record("premium was not delivered")
                    return
                }
                let upgraded = try #require(
                    try await fixture.history().first { $0.transactionId == basic.transaction.transactionId }
                )
                #expect(upgraded.isUpgraded && upgraded.isRevoked)
                guard case .delivered(let recorded)? = try await Self.throughTheUpdates(coordinator, kit, upgraded)
                else {
                    Issue.record("the upgraded transaction was not recorded")
                    return
                }
                #expect(recorded.transaction.isUpgraded)
                #expect(await coordinator.isEntitled(to: "premium"))
                #expect(await !coordinator.isEntitled(to: "basic"))
            }
        }
    }

    /// A family member bought a shareable product: the customer's device gets its shared copy through the updates,
    /// and the server grants it to the customer.
    @Test func aFamilySharedPurchaseArrivesThroughTheUpdatesAndIsGranted() async throws {
        try await ClientFixture.run { fixture in
            _ = try await fixture.simulator.appStoreConnect.createProduct(
                appAppleId: 1_234_567_890,
                ProductInput(
                    productId: "atlas",
                    type: .nonConsumable,
                    familyShareable: true,
                    price: 1990,
                    title: "Atlas"
                )
            )
            _ = try await fixture.server.catalogue.putProduct(
                bundleId: ClientFixture.bundleId,
                productId: "atlas",
                CatalogProductInput(type: .nonConsumable, entitlements: ["atlas"])
            )
            _ = try await fixture.simulator.appStoreConnect.updateAccount(
                id: fixture.account.id,
                AccountInput(familyId: "family-1")
            )
            let parent = try await fixture.simulator.appStoreConnect.createAccount(
                AccountInput(environment: "Sandbox", familyId: "family-1")
            )
            let parentPhone = try await fixture.simulator.appStoreConnect.createDevice(
                accountId: parent.id,
                DeviceInput(name: "parent")
            )
            try await fixture.serve { url in
                _ = try await fixture.buy("atlas", device: parentPhone)
                let kit = fixture.storeKit2()
                let coordinator = try fixture.coordinator(url, store: StoreKit2Storefront(kit: kit))
                let shared = try #require(try await fixture.history().first { $0.productId == "atlas" })
                #expect(shared.ownership == .familyShared)
                guard case .delivered(let delivery)? = try await Self.throughTheUpdates(coordinator, kit, shared) else {
                    Issue.record("the shared purchase was not delivered")
                    return
                }
                #expect(delivery.transaction.ownership == .familyShared)
                #expect(await coordinator.isEntitled(to: "atlas"))
            }
        }
    }

    /// A subscription renewed while the app was closed: at the next launch StoreKit 2 hands the renewal to
    /// `Transaction.updates`, and the server records it.
    @Test func aRenewalThatHappenedWhileTheAppWasClosedArrivesThroughTheUpdates() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                let kit = fixture.storeKit2()
                let first = try fixture.coordinator(url, store: StoreKit2Storefront(kit: kit))
                guard case .delivered(let bought) = try await first.purchase(productId: "premium.monthly") else {
                    Issue.record("premium was not delivered")
                    return
                }
                // The app is closed; a month passes in the App Store.
                _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 32 * 86_400)
                let renewal = try await StoreKitOutcomeTests.waitFor {
                    try await fixture.history().first {
                        $0.originalTransactionId == bought.transaction.originalTransactionId
                            && $0.transactionId != bought.transaction.transactionId
                    }
                }
                let relaunched = try fixture.coordinator(url, store: StoreKit2Storefront(kit: kit))
                _ = await relaunched.start()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { await relaunched.run(every: 60) }
                    while !kit.isObserved { try await Task.sleep(nanoseconds: 10_000_000) }
                    kit.emit(.verified(renewal))
                    let delivered = await StoreKitOutcomeTests.next(relaunched.events) { $0.kind == "delivered" }
                    group.cancelAll()
                    #expect(delivered?.transaction?.transactionId == renewal.transactionId)
                }
                let customer = try await fixture.customer("alice")
                #expect(customer.purchases.contains { $0.transactionId == renewal.transactionId })
            }
        }
    }

    /// Killed after the server recorded the purchase and before `finish()`: at the next launch the transaction
    /// comes back, is recorded once more by the same transaction id (the ledger counts it once), and is finished.
    @Test func killedBetweenTheServersAnswerAndFinishTheNextLaunchFinishesItOnce() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                let kit = fixture.storeKit2()
                let dying = try fixture.coordinator(
                    url,
                    store: ObservedStorefront(StoreKit2Storefront(kit: kit)) { _ in throw Killed() }
                )
                let outcome = try await dying.purchase(productId: "gems.100")
                guard case .notDelivered(let failure) = outcome, failure.stage == .finish else {
                    Issue.record("expected not finished, got \(outcome)")
                    return
                }
                #expect(try await fixture.customer("alice").balances == ["gems": 100])
                let launch = try await fixture.coordinator(url, store: StoreKit2Storefront(kit: fixture.storeKit2()))
                    .start()
                guard case .delivered(let delivery)? = launch.transactions.first else {
                    Issue.record("expected a delivery at launch, got \(launch.transactions)")
                    return
                }
                #expect(delivery.finished && delivery.transaction.transactionId == failure.transaction.transactionId)
                #expect(try await fixture.unfinished().isEmpty)
                let customer = try await fixture.customer("alice")
                #expect(customer.balances == ["gems": 100] && customer.purchases.count == 1)
            }
        }
    }

    /// Purchases completed by the app: its own StoreKit code buys and finishes; TillClient records what it is handed
    /// and finishes nothing.
    @Test func aPurchaseTheAppCompletesIsRecordedAndLeftForTheAppToFinish() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                let kit = fixture.storeKit2()
                let store = StoreKit2Storefront(kit: kit)
                let coordinator = try fixture.coordinator(url, store: store, finishing: .byApp)
                // The app's own code: `product.purchase()`.
                let result = try await store.purchase(Payment(productId: "pro"))
                guard case .success(let verification) = result else {
                    Issue.record("expected purchased, got \(result)")
                    return
                }
                guard case .delivered(let delivery) = await coordinator.record(result, productId: "pro") else {
                    Issue.record("expected delivered")
                    return
                }
                #expect(!delivery.finished && kit.finished.isEmpty)
                #expect(try await fixture.unfinished().count == 1)
                #expect(await coordinator.isEntitled(to: "pro"))
                #expect(verification.isVerified)
                // A cancellation the app hands over is reported as it is.
                #expect(await coordinator.record(.userCancelled, productId: "pro") == .userCancelled(productId: "pro"))
            }
        }
    }

    /// `purchase(options:)` with a promotional offer the server signed (both forms) and the server's signed word on
    /// the introductory offer: StoreKit (the simulator) accepts each.
    @Test func offersTheServerSignedGoIntoThePurchaseOptions() async throws {
        try await ClientFixture.run { fixture in
            _ = try await fixture.simulator.offers.createOffer(
                appAppleId: 1_234_567_890,
                productId: "premium.monthly",
                OfferInput(kind: .introductory, discountType: .freeTrial, duration: "P1W")
            )
            try await fixture.offerLoyal()
            try await fixture.serve { url in
                let kit = fixture.storeKit2()
                let coordinator = try fixture.coordinator(url, store: StoreKit2Storefront(kit: kit))
                let products = try await coordinator.offeredProducts()
                let premium = try #require(
                    products.products.first { $0.productId == "premium.monthly" }?.store.subscription
                )
                #expect(premium.isEligibleForIntroOffer == true && premium.introductoryOffer?.paymentMode == .freeTrial)
                let eligibility = try await coordinator.signIntroductoryEligibility(productId: "premium.monthly")
                let first = try await coordinator.purchase(
                    Payment(productId: "premium.monthly", introductoryOfferEligibility: eligibility.compactJWS)
                )
                guard case .delivered = first else {
                    Issue.record("expected delivered, got \(first)")
                    return
                }
                #expect(kit.purchaseOptions.last == [.introductoryOfferEligibility(compactJWS: eligibility.compactJWS)])
                for jws in [false, true] {
                    let signed = try await fixture.client(url).signPromotionalOffer(
                        customerId: "alice",
                        productId: "premium.monthly",
                        offerIdentifier: "loyal",
                        jws: jws
                    )
                    let offer = try #require(signed.promotionalOffer)
                    let outcome = try await coordinator.purchase(
                        Payment(productId: "premium.monthly", promotionalOffer: offer)
                    )
                    guard case .delivered = outcome else {
                        Issue.record("jws \(jws): expected delivered, got \(outcome)")
                        continue
                    }
                    let option = try #require(kit.purchaseOptions.last?.first)
                    switch (option, jws) {
                    case (.promotionalOffer(let offerID, _, _, let signature, _), false):
                        #expect(offerID == "loyal" && !signature.isEmpty)
                    case (.promotionalOfferJWS(let offerID, let compactJWS), true):
                        #expect(offerID == "loyal" && compactJWS == signed.compactJWS)
                    default:
                        Issue.record("jws \(jws): the option was \(option)")
                    }
                }
                // A malformed original signature is refused as StoreKit would, without asking the store.
                let bad = PromotionalOffer(
                    offerIdentifier: "loyal",
                    keyIdentifier: "K",
                    nonce: UUID(),
                    timestamp: 1,
                    signature: "not base64!"
                )
                let refused = try await coordinator.purchase(
                    Payment(productId: "premium.monthly", promotionalOffer: bad)
                )
                #expect(refused.kind == "failed")
            }
        }
    }

    /// The AppTransaction is read from the store once, and its id goes with the server's introductory-offer
    /// signature.
    @Test func theAppTransactionIsReadOnce() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                let kit = fixture.storeKit2()
                let coordinator = try fixture.coordinator(url, store: StoreKit2Storefront(kit: kit))
                let first = try #require(try await coordinator.appTransaction())
                let again = try #require(try await coordinator.appTransaction())
                #expect(first == again && first.isVerified && kit.appTransactionReads == 1)
                #expect(first.unsafePayloadValue.bundleId == ClientFixture.bundleId)
                #expect(first.unsafePayloadValue.appTransactionId != nil)
            }
        }
    }

    /// `Transaction.currentEntitlements` to reconcile: a purchase the server never heard of (bought and finished by
    /// another installation that never reached it) is recorded, and nothing is finished.
    @Test func reconcilingRecordsWhatTheStoreHasAndTheServerLacks() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                let bought = try await fixture.buy("pro")
                try await fixture.storefront().finish(bought)
                let kit = fixture.storeKit2()
                let coordinator = try fixture.coordinator(url, store: StoreKit2Storefront(kit: kit))
                _ = await coordinator.start()
                #expect(await !coordinator.isEntitled(to: "pro"))
                let outcomes = await coordinator.reconcile()
                #expect(outcomes.map(\.kind) == ["delivered"])
                #expect(await coordinator.isEntitled(to: "pro"))
                #expect(kit.finished.isEmpty)
                #expect(await coordinator.reconcile().isEmpty)
            }
        }
    }

    // MARK: Helpers

    /// StoreKit 2 hands `transaction` to `Transaction.updates` while the coordinator runs its background work: what
    /// the coordinator reports of it.
    static func throughTheUpdates<Store: TillStorefront>(
        _ coordinator: PurchaseCoordinator<Store>,
        _ kit: FakeStoreKit2,
        _ transaction: StoreTransaction
    ) async throws -> PurchaseOutcome? {
        let id = transaction.transactionId
        return try await StoreKitOutcomeTests.event(coordinator, matching: { $0.transaction?.transactionId == id }) {
            while !kit.isObserved { try await Task.sleep(nanoseconds: 10_000_000) }
            kit.emit(.verified(transaction))
        }
    }
}

extension ClientFixture {
    /// StoreKit 2 on a device of the tester (the phone by default).
    func storeKit2(device: SimDevice? = nil) -> FakeStoreKit2 {
        FakeStoreKit2(device: storefront(device: device))
    }

    /// The device's account's transactions now, as StoreKit 2 signs them (`Transaction.all`), read.
    func history(device: SimDevice? = nil) async throws -> [StoreTransaction] {
        try await storefront(device: device).signedTransactions().compactMap { jws in
            guard let payload = SignedPayload.decode(SignedPayload.Transaction.self, from: jws) else { return nil }
            return payload.storeTransaction(id: payload.transactionId, jws: jws, requiresFinish: false)
        }
    }
}
