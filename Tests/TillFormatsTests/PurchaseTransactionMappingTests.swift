import Foundation
import Testing
import TillCore
import TillFormats

struct PurchaseTransactionMappingTests {
    @Test func mapsEveryNormalizedField() throws {
        let tx = RoundTripTests.transaction
        let purchase = try #require(tx.purchaseTransaction())
        #expect(purchase.transactionId == "23456")
        #expect(purchase.originalTransactionId == "12345")
        #expect(purchase.productId == "com.example.product")
        #expect(purchase.bundleId == "com.example")
        #expect(purchase.productType == .autoRenewable)
        #expect(purchase.quantity == 1)
        #expect(purchase.purchaseDate == tx.purchaseDate)
        #expect(purchase.originalPurchaseDate == tx.originalPurchaseDate)
        #expect(purchase.expiresDate == tx.expiresDate)
        #expect(purchase.revocationDate == tx.revocationDate)
        #expect(purchase.revocationReason == 0)
        #expect(purchase.webOrderLineItemId == "34343")
        #expect(purchase.subscriptionGroupIdentifier == "55555")
        #expect(purchase.isUpgraded == false)
        #expect(purchase.offerIdentifier == "wb")
        #expect(purchase.environment == .sandbox)
        #expect(purchase.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(purchase.ownership == .familyShared)
        #expect(purchase.price == 10990)
        #expect(purchase.currency == "USD")
        #expect(purchase.storefront == "USA")
        #expect(purchase.isRevoked)
        #expect(purchase.billingPlanType == "BILLED_UPFRONT")
        #expect(
            purchase.commitment
                == PurchaseTransaction.Commitment(
                    billingPeriodNumber: tx.commitmentInfo?.billingPeriodNumber,
                    totalBillingPeriods: tx.commitmentInfo?.totalBillingPeriods,
                    expiresDate: tx.commitmentInfo?.commitmentExpiresDate
                )
        )
        #expect(purchase.commitment?.billingPeriodNumber != nil)
    }

    @Test func defaultsWhenOptionalFieldsAreMissing() throws {
        let minimal = JWSTransactionDecodedPayload(
            transactionId: "9",
            bundleId: "b",
            productId: "p",
            purchaseDate: RoundTripTests.t,
            environment: .production
        )
        let purchase = try #require(minimal.purchaseTransaction())
        #expect(purchase.originalTransactionId == "9")
        #expect(purchase.quantity == 1)
        #expect(purchase.ownership == .purchased)
        #expect(purchase.productType == nil)
        #expect(!purchase.isUpgraded && !purchase.isTrialPeriod && !purchase.isInIntroOfferPeriod)
        #expect(purchase.billingPlanType == nil && purchase.commitment == nil)
    }

    @Test func introductoryOffersSplitIntoTrialAndIntroPrice() throws {
        var tx = JWSTransactionDecodedPayload(
            transactionId: "9",
            bundleId: "b",
            productId: "p",
            purchaseDate: RoundTripTests.t,
            offerType: .introductoryOffer,
            environment: .sandbox,
            offerDiscountType: .freeTrial
        )
        var purchase = try #require(tx.purchaseTransaction())
        #expect(purchase.isTrialPeriod && !purchase.isInIntroOfferPeriod)
        tx.offerDiscountType = .payAsYouGo
        purchase = try #require(tx.purchaseTransaction())
        #expect(!purchase.isTrialPeriod && purchase.isInIntroOfferPeriod)
        tx.offerType = .promotionalOffer
        purchase = try #require(tx.purchaseTransaction())
        #expect(!purchase.isTrialPeriod && !purchase.isInIntroOfferPeriod)
    }

    @Test(arguments: ["transactionId", "productId", "bundleId"])
    func missingIdentifierGivesNil(field: String) {
        var tx = RoundTripTests.transaction
        switch field {
        case "transactionId": tx.transactionId = nil
        case "productId": tx.productId = nil
        default: tx.bundleId = nil
        }
        #expect(tx.purchaseTransaction() == nil)
    }

    @Test func missingPurchaseDateOrEnvironmentGivesNil() {
        var tx = RoundTripTests.transaction
        tx.purchaseDate = nil
        #expect(tx.purchaseTransaction() == nil)
        tx = RoundTripTests.transaction
        tx.environment = nil
        #expect(tx.purchaseTransaction() == nil)
    }
}
