import Testing
import TillCore

struct ProductTypeTests {
    @Test func restorableTypesAreTheOnesTheStoreBringsBack() {
        #expect(ProductType.allCases.filter(\.isRestorable) == [.nonConsumable, .autoRenewable, .freeSubscription])
        #expect(
            ProductType.allCases.filter { $0.crossDeviceAvailability == .developerSyncs } == [
                .consumable, .nonRenewing,
            ]
        )
    }

    @Test func onlySubscriptionsThatAreSoldExpire() {
        #expect(ProductType.allCases.filter(\.expires) == [.autoRenewable, .nonRenewing])
        #expect(ProductType.freeSubscription.expires == false)
        #expect(ProductType.nonRenewing.expiryIsSetByDeveloper)
        #expect(!ProductType.autoRenewable.expiryIsSetByDeveloper)
    }

    @Test func consumablesAreCreditedPerPurchaseAndLeaveTheReceipt() {
        #expect(ProductType.allCases.filter(\.isCreditedPerPurchase) == [.consumable])
        #expect(ProductType.allCases.filter { !$0.staysInReceiptAfterFinish } == [.consumable])
        #expect(ProductType.allCases.filter(\.canBePurchasedRepeatedly) == [.consumable, .nonRenewing])
    }
}
