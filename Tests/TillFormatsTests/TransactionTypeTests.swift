import Testing
import TillCore
import TillFormats

struct TransactionTypeTests {
    @Test func transactionTypesMapToProductTypes() {
        #expect(TransactionType.nonConsumable.productType == .nonConsumable)
        #expect(TransactionType.consumable.productType == .consumable)
        #expect(TransactionType.autoRenewableSubscription.productType == .autoRenewable)
        #expect(TransactionType.nonRenewingSubscription.productType == .nonRenewing)
        #expect(TransactionType(rawValue: "Non-consumable").productType == nil)
    }

    @Test func productTypesMapBackExceptFreeSubscriptions() {
        for type in ProductType.allCases where type != .freeSubscription {
            #expect(TransactionType(type)?.productType == type)
        }
        #expect(TransactionType(.freeSubscription) == nil)
        #expect(TransactionType(.nonConsumable)?.rawValue == "Non-Consumable")
    }

    @Test func legacyReceiptTypesNameTheirEnvironment() {
        #expect(LegacyReceiptType.productionVPP.environment == .production)
        #expect(LegacyReceiptType.productionSandbox.environment == .sandbox)
        #expect(LegacyReceiptType.productionVPPSandbox.environment == .sandbox)
        #expect(LegacyReceiptType.xcode.environment == .xcode)
        #expect(LegacyReceiptType(rawValue: "Other").environment == nil)
    }
}
