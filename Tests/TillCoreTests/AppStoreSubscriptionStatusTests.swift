import Foundation
import Testing
import TillCore

struct AppStoreSubscriptionStatusTests {
    let expiry = Date(timeIntervalSince1970: 1_700_000_000)

    @Test func aPeriodNotOverIsActive() {
        #expect(AppStoreSubscriptionStatus.evaluate(.init(expiresDate: expiry), at: expiry - 1) == .active)
        #expect(AppStoreSubscriptionStatus.evaluate(.init(expiresDate: expiry), at: expiry) == .expired)
    }

    @Test func aFailedRenewalIsGraceThenBillingRetry() {
        let facts = AppStoreSubscriptionStatus.Facts(
            expiresDate: expiry,
            isInBillingRetryPeriod: true,
            gracePeriodExpiresDate: expiry + 3600
        )
        #expect(AppStoreSubscriptionStatus.evaluate(facts, at: expiry + 60) == .gracePeriod)
        #expect(AppStoreSubscriptionStatus.evaluate(facts, at: expiry + 3600) == .billingRetry)
        #expect(AppStoreSubscriptionStatus.gracePeriod.grantsAccess && !AppStoreSubscriptionStatus.billingRetry.grantsAccess)
    }

    @Test func revocationWinsOverEverything() {
        let facts = AppStoreSubscriptionStatus.Facts(expiresDate: expiry, revocationDate: expiry - 100)
        #expect(AppStoreSubscriptionStatus.evaluate(facts, at: expiry - 200) == .active)
        #expect(AppStoreSubscriptionStatus.evaluate(facts, at: expiry - 50) == .revoked)
    }

    @Test func unknownStatusesSurvive() {
        #expect(AppStoreSubscriptionStatus(rawValue: 9).description == "unknown(9)")
        #expect(AppStoreSubscriptionStatus.revoked.rawValue == 5)
    }

    @Test func purchasesGrantAccessByTheirType() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        func transaction(_ type: ProductType, expires: Date? = nil, revoked: Date? = nil) -> PurchaseTransaction {
            PurchaseTransaction(
                transactionId: "1",
                productId: "p",
                bundleId: "b",
                productType: type,
                purchaseDate: now - 10,
                expiresDate: expires,
                revocationDate: revoked,
                environment: .sandbox
            )
        }
        #expect(transaction(.nonConsumable).grantsAccess(at: now))
        #expect(!transaction(.nonConsumable, revoked: now - 1).grantsAccess(at: now))
        #expect(transaction(.autoRenewable, expires: now + 1).grantsAccess(at: now))
        #expect(!transaction(.autoRenewable, expires: now).grantsAccess(at: now))
        #expect(!transaction(.nonRenewing).grantsAccess(at: now))
        #expect(transaction(.freeSubscription).grantsAccess(at: now))
    }
}
