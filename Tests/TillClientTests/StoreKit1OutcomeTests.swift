import Foundation
import Testing
import TillContract
import TillCore
import TillFormats
import TillTestSupport

@testable import TillClient
@testable import TillServer
@testable import TillSimulator

/// The outcomes only StoreKit 1 has, through the storefront's generic logic (``StoreKit1Storefront``: the payment
/// queue's observer, restore, the receipt) and the coordinator, on Linux: StoreKit 1 is played by ``FakeStoreKit1``
/// over the simulator's device, so the app receipt the server verifies is real. The outcomes both StoreKits share are
/// in `StoreKitOutcomeTests`, run on each.
@Suite(.sharingTheMachine, .timeLimit(.minutes(10)))
struct StoreKit1OutcomeTests {
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
            try await fixture.offerLoyal()
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
