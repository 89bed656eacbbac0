import Foundation
import Testing
import TillCore
import TillFormats

/// Apple's signed-payload model fixtures decode to the values Apple's own tests assert (apple-formats §7.1).
@Suite(.enabled(if: Fixtures.shouldRun, Fixtures.skipReason))
struct SignedPayloadFixtureTests {
    @Test func signedTransactionDecodesEveryField() throws {
        let tx = try Fixtures.model(JWSTransactionDecodedPayload.self, "signedTransaction")
        #expect(tx.originalTransactionId == "12345")
        #expect(tx.transactionId == "23456")
        #expect(tx.webOrderLineItemId == "34343")
        #expect(tx.bundleId == "com.example")
        #expect(tx.productId == "com.example.product")
        #expect(tx.subscriptionGroupIdentifier == "55555")
        #expect(tx.purchaseDate == ms(1_698_148_900_000))
        #expect(tx.originalPurchaseDate == ms(1_698_148_800_000))
        #expect(tx.expiresDate == ms(1_698_149_000_000))
        #expect(tx.quantity == 1)
        #expect(tx.type == .autoRenewableSubscription)
        #expect(tx.type?.productType == .autoRenewable)
        #expect(tx.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(tx.inAppOwnershipType == .purchased)
        #expect(tx.signedDate == ms(1_698_148_900_000))
        #expect(tx.revocationReason == .appIssue)
        #expect(tx.revocationDate == ms(1_698_148_950_000))
        #expect(tx.isUpgraded == true)
        #expect(tx.offerType == .introductoryOffer)
        #expect(tx.offerIdentifier == "abc.123")
        #expect(tx.environment == .localTesting)
        #expect(tx.storefront == "USA")
        #expect(tx.storefrontId == "143441")
        #expect(tx.transactionReason == .purchase)
        #expect(tx.price == 10990)
        #expect(tx.currency == "USD")
        #expect(tx.offerDiscountType == .payAsYouGo)
        #expect(tx.appTransactionId == "71134")
        #expect(tx.offerPeriod == "P1Y")
        #expect(tx.billingPlanType == .monthly)
        #expect(tx.revocationType == nil)
        #expect(
            tx.commitmentInfo
                == .init(
                    billingPeriodNumber: 3,
                    commitmentExpiresDate: ms(1_698_150_000_000),
                    commitmentPrice: 119_880,
                    totalBillingPeriods: 12
                )
        )
    }

    @Test func revocationFixtureAddsTypeAndPercentage() throws {
        let tx = try Fixtures.model(JWSTransactionDecodedPayload.self, "signedTransactionWithRevocation")
        #expect(tx.revocationType == .refundProrated)
        #expect(tx.revocationPercentage == 50000)
        #expect(tx.revocationReason == .appIssue)
        #expect(tx.revocationDate == ms(1_698_148_950_000))
        #expect(tx.commitmentInfo == nil)
    }

    @Test func transactionIdentityAndVerificationDate() throws {
        let tx = try Fixtures.model(JWSTransactionDecodedPayload.self, "signedTransaction")
        #expect(JWSTransactionDecodedPayload.payloadKind == .transaction)
        #expect(tx.verificationDate == ms(1_698_148_900_000))
        #expect(tx.identity == PayloadIdentity(bundleId: "com.example", environment: .localTesting))
    }

    @Test func signedRenewalInfoDecodesEveryField() throws {
        let info = try Fixtures.model(JWSRenewalInfoDecodedPayload.self, "signedRenewalInfo")
        #expect(info.expirationIntent == .customerCancelled)
        #expect(info.originalTransactionId == "12345")
        #expect(info.autoRenewProductId == "com.example.product.2")
        #expect(info.productId == "com.example.product")
        #expect(info.autoRenewStatus == .on)
        #expect(info.isInBillingRetryPeriod == true)
        #expect(info.priceIncreaseStatus == .notResponded)
        #expect(info.gracePeriodExpiresDate == ms(1_698_148_900_000))
        #expect(info.offerType == .promotionalOffer)
        #expect(info.offerIdentifier == "abc.123")
        #expect(info.signedDate == ms(1_698_148_800_000))
        #expect(info.environment == .localTesting)
        #expect(info.recentSubscriptionStartDate == ms(1_698_148_800_000))
        #expect(info.renewalDate == ms(1_698_148_850_000))
        #expect(info.renewalPrice == 9990)
        #expect(info.currency == "USD")
        #expect(info.offerDiscountType == .payAsYouGo)
        #expect(info.eligibleWinBackOfferIds == ["eligible1", "eligible2"])
        #expect(info.appTransactionId == "71134")
        #expect(info.offerPeriod == "P1Y")
        #expect(info.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(info.renewalBillingPlanType == .monthly)
        #expect(
            info.commitmentInfo
                == .init(
                    commitmentAutoRenewProductId: "com.example.product.commitment",
                    commitmentAutoRenewStatus: .on,
                    commitmentRenewalBillingPlanType: .monthly,
                    commitmentRenewalDate: ms(1_698_149_500_000),
                    commitmentRenewalPrice: 9990
                )
        )
        #expect(info.verificationDate == ms(1_698_148_800_000))
        #expect(info.identity == PayloadIdentity(environment: .localTesting))
    }

    @Test func appTransactionDecodesEveryField() throws {
        let app = try Fixtures.model(AppTransaction.self, "appTransaction")
        #expect(app.receiptType == .localTesting)
        #expect(app.appAppleId == 531_412)
        #expect(app.bundleId == "com.example")
        #expect(app.applicationVersion == "1.2.3")
        #expect(app.versionExternalIdentifier == 512)
        #expect(app.receiptCreationDate == ms(1_698_148_900_000))
        #expect(app.originalPurchaseDate == ms(1_698_148_800_000))
        #expect(app.originalApplicationVersion == "1.1.2")
        #expect(app.deviceVerification == "device_verification_value")
        #expect(app.deviceVerificationNonce == "48ccfa42-7431-4f22-9908-7e88983e105a")
        #expect(app.preorderDate == ms(1_698_148_700_000))
        #expect(app.appTransactionId == "71134")
        #expect(app.originalPlatform == .iOS)
        #expect(app.verificationDate == ms(1_698_148_900_000))
        #expect(
            app.identity == PayloadIdentity(bundleId: "com.example", appAppleId: 531_412, environment: .localTesting)
        )
    }

    @Test func xcodeTransactionTruncatesFractionalMilliseconds() throws {
        let tx = try Fixtures.jwsPayload(
            JWSTransactionDecodedPayload.self,
            "apple-library/xcode/xcode-signed-transaction"
        )
        #expect(tx.transactionId == "0")
        #expect(tx.originalTransactionId == "0")
        #expect(tx.webOrderLineItemId == "0")
        #expect(tx.productId == "pass.premium")
        #expect(tx.subscriptionGroupIdentifier == "6F3A93AB")
        #expect(tx.purchaseDate?.millisecondsSince1970 == 1_697_679_936_049)
        #expect(tx.originalPurchaseDate?.millisecondsSince1970 == 1_697_679_936_049)
        #expect(tx.expiresDate?.millisecondsSince1970 == 1_700_358_336_049)
        #expect(tx.signedDate?.millisecondsSince1970 == 1_697_679_936_056)
        #expect(tx.quantity == 1)
        #expect(tx.type == .autoRenewableSubscription)
        #expect(tx.appAccountToken == nil)
        #expect(tx.inAppOwnershipType == .purchased)
        #expect(tx.revocationReason == nil && tx.revocationDate == nil)
        #expect(tx.isUpgraded == false)
        #expect(tx.offerType == .introductoryOffer)
        #expect(tx.offerIdentifier == nil)
        #expect(tx.environment == .xcode)
        #expect(tx.storefront == "USA")
        #expect(tx.storefrontId == "143441")
        #expect(tx.transactionReason == .purchase)
        #expect(tx.deviceVerification == "sGDnpg+ozb8uwDSuCDZ2oVZo1CKrbB8ujR8VxCxhykRwyBIK6x6XCyERm8yWrzE8")
        #expect(tx.deviceVerificationNonce == "7edea87d-98f0-42d0-9682-49ca81022f73")
        #expect(
            tx.identity == PayloadIdentity(bundleId: "com.example.naturelab.backyardbirds.example", environment: .xcode)
        )
    }

    @Test func xcodeRenewalInfo() throws {
        let info = try Fixtures.jwsPayload(
            JWSRenewalInfoDecodedPayload.self,
            "apple-library/xcode/xcode-signed-renewal-info"
        )
        #expect(info.expirationIntent == nil)
        #expect(info.originalTransactionId == "0")
        #expect(info.autoRenewProductId == "pass.premium")
        #expect(info.productId == "pass.premium")
        #expect(info.autoRenewStatus == .on)
        #expect(info.isInBillingRetryPeriod == nil)
        #expect(info.priceIncreaseStatus == nil)
        #expect(info.gracePeriodExpiresDate == nil)
        #expect(info.offerType == nil && info.offerIdentifier == nil)
        #expect(info.signedDate?.millisecondsSince1970 == 1_697_679_936_711)
        #expect(info.environment == .xcode)
        #expect(info.recentSubscriptionStartDate?.millisecondsSince1970 == 1_697_679_936_049)
        #expect(info.renewalDate?.millisecondsSince1970 == 1_700_358_336_049)
    }

    @Test func xcodeAppTransactionIncludesRequestDate() throws {
        let app = try Fixtures.jwsPayload(AppTransaction.self, "apple-library/xcode/xcode-signed-app-transaction")
        #expect(app.appAppleId == nil)
        #expect(app.bundleId == "com.example.naturelab.backyardbirds.example")
        #expect(app.applicationVersion == "1")
        #expect(app.versionExternalIdentifier == nil)
        #expect(app.originalPurchaseDate?.millisecondsSince1970 == -62_135_769_600_000)
        #expect(app.originalApplicationVersion == "1")
        #expect(app.deviceVerification == "cYUsXc53EbYc0pOeXG5d6/31LGHeVGf84sqSN0OrJi5u/j2H89WWKgS8N0hMsMlf")
        #expect(app.deviceVerificationNonce == "48c8b92d-ce0d-4229-bedf-e61b4f9cfc92")
        #expect(app.preorderDate == nil)
        #expect(app.receiptType == .xcode)
        #expect(app.receiptCreationDate?.millisecondsSince1970 == 1_697_680_122_257)
        #expect(app.requestDate?.millisecondsSince1970 == 1_697_680_122_257)
        #expect(app.verificationDate?.millisecondsSince1970 == 1_697_680_122_257)
    }

    @Test func realSandboxTransactionFromApple() throws {
        let tx = try Fixtures.jwsPayload(
            JWSTransactionDecodedPayload.self,
            "third-party/misc/mingos-sandbox-transaction.jws"
        )
        #expect(tx.transactionId == "2000000847061981")
        #expect(tx.originalTransactionId == "2000000847061981")
        #expect(tx.bundleId == "com.goodheartapp")
        #expect(tx.productId == "gh_super_good_ticket_1")
        #expect(tx.purchaseDate == ms(1_738_645_560_000))
        #expect(tx.type == .consumable)
        #expect(tx.environment == .sandbox)
        #expect(tx.storefront == "JPN" && tx.storefrontId == "143462")
        #expect(tx.price == 230_000 && tx.currency == "JPY")
        #expect(tx.verificationDate == ms(1_739_161_772_561))
        let purchase = try #require(tx.purchaseTransaction())
        #expect(purchase.productType == .consumable)
        #expect(purchase.environment == .sandbox)
        #expect(purchase.price == 230_000)
        #expect(purchase.isOriginal)
    }
}
