import Foundation
import Testing
import TillContract
import TillCore
import TillFormats
import TillTestSupport

@testable import TillClient
@testable import TillServer
@testable import TillSimulator

/// Every StoreKit 1 outcome through the storefront's generic logic (``StoreKit1Storefront``: the payment queue's
/// observer, restore, the receipt) and the coordinator, on Linux: StoreKit 1 is played by ``FakeStoreKit1`` over the
/// simulator's device, so the app receipt the server verifies is real.
@Suite(.sharingTheMachine, .timeLimit(.minutes(10)))
struct StoreKit1OutcomeTests {
    @Test func aPurchaseIsRecordedFromTheAppReceiptAndFinishedAfterDelivery() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                let kit = fixture.storeKit1()
                let coordinator = try fixture.coordinator(url, store: StoreKit1Storefront(kit: kit))
                let token = UUID()
                let outcome = try await coordinator.purchase(Payment(productId: "pro", appAccountToken: token))
                guard case .delivered(let delivery) = outcome else {
                    Issue.record("expected delivered, got \(outcome)")
                    return
                }
                #expect(kit.added.first?.applicationUsername == token.uuidString.lowercased())
                #expect(delivery.transaction.appAccountToken == token && delivery.transaction.signedTransaction == nil)
                #expect(delivery.submission?.kind == .appReceipt)
                #expect(delivery.finished && kit.finished == [delivery.transaction.id])
                #expect(delivery.files.map(\.name) == ["manual.pdf"])
                #expect(await coordinator.isEntitled(to: "pro"))
                #expect(try await fixture.unfinished().isEmpty)
            }
        }
    }

    @Test func aDeferredPaymentIsPendingThenTheObserverHearsItApproved() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.turnOnAskToBuy()
            try await fixture.serve { url in
                let kit = fixture.storeKit1()
                let coordinator = try fixture.coordinator(url, store: StoreKit1Storefront(kit: kit))
                guard case .pending(let pending) = try await coordinator.purchase(productId: "pro") else {
                    Issue.record("expected pending")
                    return
                }
                #expect(pending.productId == "pro")
                let entry = try #require(try await fixture.unfinished().first { $0.productId == "pro" })
                let delivered = try await StoreKit2OutcomeTests.event(coordinator, matching: { $0.kind == "delivered" })
                {
                    try await kit.decide(paymentId: try #require(entry.paymentId), approve: true)
                }
                #expect(delivered?.productId == "pro")
                #expect(await coordinator.isEntitled(to: "pro"))
                #expect(try await fixture.unfinished().isEmpty)
            }
        }
    }

    @Test func aDeclinedDeferredPaymentIsReportedFailedAndFinished() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.turnOnAskToBuy()
            try await fixture.serve { url in
                let kit = fixture.storeKit1()
                let coordinator = try fixture.coordinator(url, store: StoreKit1Storefront(kit: kit))
                guard case .pending = try await coordinator.purchase(productId: "pro") else {
                    Issue.record("expected pending")
                    return
                }
                let entry = try #require(try await fixture.unfinished().first { $0.productId == "pro" })
                let declined = try await StoreKit2OutcomeTests.event(coordinator, matching: { $0.kind == "failed" }) {
                    try await kit.decide(paymentId: try #require(entry.paymentId), approve: false)
                }
                #expect(declined?.productId == "pro")
                #expect(try await fixture.unfinished().isEmpty)
                #expect(try await fixture.customer("alice").purchases.isEmpty)
            }
        }
    }

    /// Every `SKError` a failed transaction can carry: a cancellation is ``PurchaseOutcome/userCancelled(productId:)``,
    /// each other code a failure with StoreKit 2's code of the same meaning (or the number itself); every failed
    /// transaction is finished, and nothing is submitted.
    @Test func everySKErrorIsReportedWithItsCodeAndTheFailedTransactionFinished() async throws {
        try await ClientFixture.run { fixture in
            let kit = fixture.storeKit1()
            let coordinator = try fixture.coordinator(
                try await ClientFixture.deadURL(),
                store: StoreKit1Storefront(kit: kit)
            )
            kit.failNextPayment(code: 2)
            #expect(try await coordinator.purchase(productId: "pro") == .userCancelled(productId: "pro"))
            let named: [Int: StoreError.Code] = [
                0: .unknown, 1: .clientInvalid, 3: .paymentInvalid, 4: .purchaseNotAllowed, 5: .productUnavailable,
                6: .cloudServicePermissionDenied, 7: .networkError, 8: .cloudServiceRevoked,
                9: .privacyAcknowledgementRequired, 10: .unauthorizedRequestData, 11: .invalidOfferIdentifier,
                12: .invalidOfferSignature, 13: .missingOfferParameters, 14: .invalidOfferPrice,
                15: .other(15), 16: .other(16), 17: .other(17), 18: .ineligibleForOffer, 19: .unsupported,
                20: .other(20),
            ]
            for (number, code) in named.sorted(by: { $0.key < $1.key }) {
                kit.failNextPayment(code: number, message: "SKError \(number)")
                let outcome = try await coordinator.purchase(productId: "pro")
                #expect(
                    outcome == .failed(productId: "pro", StoreError(code, message: "SKError \(number)")),
                    "\(number)"
                )
                #expect(code.skErrorCode == number)
            }
            for _ in 0..<600 where kit.finished.count < named.count + 1 {
                try await Task.sleep(nanoseconds: 100_000_000)
            }
            #expect(kit.finished.count == named.count + 1, "failed transactions finished: \(kit.finished.count)")
            #expect(await coordinator.outbox.pending.isEmpty)
        }
    }

    @Test func restoreDeliversAndFinishesEachRestoredTransaction() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                let phone = try fixture.coordinator(url, store: StoreKit1Storefront(kit: fixture.storeKit1()))
                for product in ["pro", "premium.monthly", "gems.100"] {
                    guard case .delivered = try await phone.purchase(productId: product) else {
                        Issue.record("\(product) was not delivered")
                        return
                    }
                }
                let tablet = try await fixture.simulator.appStoreConnect.createDevice(
                    accountId: fixture.account.id,
                    DeviceInput(name: "iPad")
                )
                let kit = fixture.storeKit1(device: tablet)
                let second = try fixture.coordinator(url, folder: "tablet", store: StoreKit1Storefront(kit: kit))
                guard case .completed(let deliveries) = await second.restore() else {
                    Issue.record("expected completed")
                    return
                }
                #expect(Set(deliveries.map(\.transaction.productId)) == ["pro", "premium.monthly"])
                #expect(deliveries.allSatisfy { $0.transaction.state == .restored && $0.finished })
                #expect(await second.isEntitled(to: "pro"))
                #expect(try await fixture.unfinished(device: tablet).isEmpty)
                kit.failRestore(code: 0, message: "Cannot connect to the App Store.")
                #expect(
                    await second.restore()
                        == .failed(
                            RestoreFailure(
                                storeError: StoreError(.unknown, message: "Cannot connect to the App Store.")
                            )
                        )
                )
            }
        }
    }

    /// No receipt on the device (a fresh install): `SKReceiptRefreshRequest` fetches one, and the purchase is recorded
    /// from it.
    @Test func aMissingReceiptIsRefreshedBeforeItIsSubmitted() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                let kit = fixture.storeKit1()
                kit.removeReceipt()
                let coordinator = try fixture.coordinator(url, store: StoreKit1Storefront(kit: kit))
                guard case .delivered = try await coordinator.purchase(productId: "gems.100") else {
                    Issue.record("gems were not delivered")
                    return
                }
                #expect(kit.receiptRefreshes == 1)
                #expect(await coordinator.balance(of: "gems") == 100)
            }
        }
    }

    /// `SKPaymentDiscount` from the server's original signature: the store (the simulator) checks it. StoreKit 1
    /// has no JWS form: such an offer is refused before the queue sees it.
    @Test func aPromotionalOfferTheServerSignedGoesInAnSKPaymentDiscount() async throws {
        try await ClientFixture.run { fixture in
            _ = try await fixture.simulator.offers.createOffer(
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
            _ = try await fixture.server.offers.putOffer(
                bundleId: ClientFixture.bundleId,
                productId: "premium.monthly",
                offerIdentifier: "loyal",
                eligibility: .currentOrLapsedSubscribers
            )
            try await fixture.serve { url in
                let kit = fixture.storeKit1()
                let coordinator = try fixture.coordinator(url, store: StoreKit1Storefront(kit: kit))
                guard case .delivered = try await coordinator.purchase(productId: "premium.monthly") else {
                    Issue.record("premium was not delivered")
                    return
                }
                let signed = try await fixture.client(url).signPromotionalOffer(
                    customerId: "alice",
                    productId: "premium.monthly",
                    offerIdentifier: "loyal"
                )
                let offer = try #require(signed.promotionalOffer)
                let outcome = try await coordinator.purchase(
                    Payment(productId: "premium.monthly", promotionalOffer: offer)
                )
                #expect(outcome.kind == "delivered", "\(outcome)")
                let discount = try #require(kit.added.last?.paymentDiscount)
                #expect(discount.identifier == "loyal" && discount.signature == signed.signature)
                let jws = PromotionalOffer(offerIdentifier: "loyal", compactJWS: "eyJ.x.y")
                let refused = try await coordinator.purchase(
                    Payment(productId: "premium.monthly", promotionalOffer: jws)
                )
                guard case .failed(_, let error) = refused else {
                    Issue.record("expected failed, got \(refused)")
                    return
                }
                #expect(error.code == .unsupported)
            }
        }
    }

    /// The app died after the store charged: the queue hands the transaction back at launch, and it is delivered.
    @Test func aPurchasedTransactionLeftInTheQueueIsDeliveredAtLaunch() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in
                _ = try await fixture.buy("gems.100")
                let kit = fixture.storeKit1()
                let launch = try await fixture.coordinator(url, store: StoreKit1Storefront(kit: kit)).start()
                #expect(launch.transactions.map(\.kind) == ["delivered"])
                #expect(launch.snapshot?.balance("gems") == 100)
                #expect(try await fixture.unfinished().isEmpty)
            }
        }
    }
}

extension ClientFixture {
    /// StoreKit 1 on a device of the tester (the phone by default).
    func storeKit1(device: SimDevice? = nil) -> FakeStoreKit1 {
        FakeStoreKit1(
            simulator: simulator,
            deviceId: (device ?? self.device).id,
            bundleId: Self.bundleId,
            store: storefront(device: device)
        )
    }
}
