import Foundation
import Testing
import TillCore
import TillFormats

/// Every model, with every field set, encodes and decodes back equal; dates travel as integer milliseconds.
struct RoundTripTests {
    static let t = Date(millisecondsSince1970: 1_698_148_900_000)

    static let transaction = JWSTransactionDecodedPayload(
        transactionId: "23456",
        originalTransactionId: "12345",
        webOrderLineItemId: "34343",
        bundleId: "com.example",
        productId: "com.example.product",
        subscriptionGroupIdentifier: "55555",
        purchaseDate: t,
        originalPurchaseDate: t.addingTimeInterval(-100),
        expiresDate: t.addingTimeInterval(100),
        quantity: 1,
        type: .autoRenewableSubscription,
        appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138",
        inAppOwnershipType: .familyShared,
        signedDate: t,
        revocationReason: .other,
        revocationDate: t.addingTimeInterval(50),
        isUpgraded: false,
        offerType: .winBackOffer,
        offerIdentifier: "wb",
        environment: .sandbox,
        storefront: "USA",
        storefrontId: "143441",
        transactionReason: .renewal,
        currency: "USD",
        price: 10990,
        offerDiscountType: .freeTrial,
        appTransactionId: "71134",
        offerPeriod: "P1M",
        revocationType: .familyRevoke,
        revocationPercentage: 100_000,
        billingPlanType: .billedUpfront,
        commitmentInfo: .init(
            billingPeriodNumber: 1,
            commitmentExpiresDate: t,
            commitmentPrice: 5,
            totalBillingPeriods: 12
        ),
        deviceVerification: "dv",
        deviceVerificationNonce: "nonce"
    )

    static let renewalInfo = JWSRenewalInfoDecodedPayload(
        expirationIntent: .billingError,
        originalTransactionId: "12345",
        autoRenewProductId: "b",
        productId: "a",
        autoRenewStatus: .off,
        isInBillingRetryPeriod: true,
        priceIncreaseStatus: .consented,
        gracePeriodExpiresDate: t,
        offerType: .subscriptionOfferCode,
        offerIdentifier: "code",
        signedDate: t,
        environment: .production,
        recentSubscriptionStartDate: t,
        renewalDate: t,
        currency: "EUR",
        renewalPrice: 4990,
        offerDiscountType: .payUpFront,
        eligibleWinBackOfferIds: ["w"],
        appAccountToken: "tok",
        appTransactionId: "1",
        offerPeriod: "P3M",
        renewalBillingPlanType: .monthly,
        commitmentInfo: .init(
            commitmentAutoRenewProductId: "c",
            commitmentAutoRenewStatus: .on,
            commitmentRenewalBillingPlanType: .billedUpfront,
            commitmentRenewalDate: t,
            commitmentRenewalPrice: 1
        ),
        deviceVerification: "dv",
        deviceVerificationNonce: "n"
    )

    static let appTransaction = AppTransaction(
        receiptType: .production,
        appAppleId: 1234,
        bundleId: "com.example",
        applicationVersion: "2",
        versionExternalIdentifier: 99,
        receiptCreationDate: t,
        originalPurchaseDate: t,
        originalApplicationVersion: "1",
        deviceVerification: "dv",
        deviceVerificationNonce: "n",
        preorderDate: t,
        appTransactionId: "7",
        originalPlatform: .visionOS,
        requestDate: t
    )

    @Test func signedPayloadsRoundTrip() throws {
        #expect(try roundTrip(Self.transaction) == Self.transaction)
        #expect(try roundTrip(Self.renewalInfo) == Self.renewalInfo)
        #expect(try roundTrip(Self.appTransaction) == Self.appTransaction)
        #expect(try json(Self.transaction).contains(#""purchaseDate":1698148900000,"#))
        #expect(try json(Self.appTransaction).contains(#""requestDate":1698148900000"#))
    }

    @Test func notificationsRoundTrip() throws {
        let payloads = [
            ResponseBodyV2DecodedPayload(
                notificationType: .didRenew,
                subtype: .billingRecovery,
                notificationUUID: "u",
                version: "2.0",
                signedDate: Self.t,
                data: NotificationData(
                    appAppleId: 1,
                    bundleId: "b",
                    bundleVersion: "3",
                    environment: .sandbox,
                    signedTransactionInfo: "t",
                    signedRenewalInfo: "r",
                    status: .gracePeriod,
                    consumptionRequestReason: .legal
                )
            ),
            ResponseBodyV2DecodedPayload(
                notificationType: .renewalExtension,
                subtype: .failure,
                summary: NotificationSummary(
                    environment: .production,
                    appAppleId: 2,
                    bundleId: "b",
                    productId: "p",
                    requestIdentifier: "r",
                    storefrontCountryCodes: ["USA"],
                    succeededCount: 3,
                    failedCount: 4
                )
            ),
            ResponseBodyV2DecodedPayload(
                notificationType: .externalPurchaseToken,
                subtype: .created,
                externalPurchaseToken: ExternalPurchaseToken(
                    externalPurchaseId: "x",
                    tokenCreationDate: Self.t,
                    appAppleId: 5,
                    bundleId: "b"
                )
            ),
            ResponseBodyV2DecodedPayload(
                notificationType: .rescindConsent,
                appData: AppData(appAppleId: 6, bundleId: "b", environment: .xcode, signedAppTransactionInfo: "a")
            ),
        ]
        for payload in payloads {
            #expect(try roundTrip(payload) == payload)
        }
        #expect(try roundTrip(ResponseBodyV2(signedPayload: "a.b.c")) == ResponseBodyV2(signedPayload: "a.b.c"))
        #expect(try json(ResponseBodyV2(signedPayload: "a.b.c")) == #"{"signedPayload":"a.b.c"}"#)
    }

    @Test func serverAPIResponsesRoundTrip() throws {
        let attempts = [SendAttemptItem(attemptDate: Self.t, sendAttemptResult: .tlsIssue)]
        #expect(try roundTrip(TransactionInfoResponse(signedTransactionInfo: "s")) == .init(signedTransactionInfo: "s"))
        #expect(
            try roundTrip(AppTransactionInfoResponse(signedAppTransactionInfo: "s"))
                == .init(signedAppTransactionInfo: "s")
        )
        let history = HistoryResponse(
            revision: "r",
            hasMore: false,
            bundleId: "b",
            appAppleId: 1,
            environment: .sandbox,
            signedTransactions: ["s"]
        )
        #expect(try roundTrip(history) == history)
        let status = StatusResponse(
            environment: .production,
            bundleId: "b",
            appAppleId: 1,
            data: [
                SubscriptionGroupIdentifierItem(
                    subscriptionGroupIdentifier: "g",
                    lastTransactions: [
                        LastTransactionsItem(
                            status: .billingRetry,
                            originalTransactionId: "o",
                            signedTransactionInfo: "t",
                            signedRenewalInfo: "r"
                        )
                    ]
                )
            ]
        )
        #expect(try roundTrip(status) == status)
        let lookup = OrderLookupResponse(status: .valid, signedTransactions: ["a"])
        #expect(try roundTrip(lookup) == lookup)
        let refunds = RefundHistoryResponse(signedTransactions: ["a"], revision: "r", hasMore: true)
        #expect(try roundTrip(refunds) == refunds)
        let test = CheckTestNotificationResponse(signedPayload: "p", sendAttempts: attempts)
        #expect(try roundTrip(test) == test)
        #expect(
            try roundTrip(SendTestNotificationResponse(testNotificationToken: "t")) == .init(testNotificationToken: "t")
        )
        let notificationHistory = NotificationHistoryResponse(
            paginationToken: "p",
            hasMore: false,
            notificationHistory: [NotificationHistoryResponseItem(signedPayload: "s", sendAttempts: attempts)]
        )
        #expect(try roundTrip(notificationHistory) == notificationHistory)
        let extended = ExtendRenewalDateResponse(
            originalTransactionId: "o",
            webOrderLineItemId: "w",
            success: true,
            effectiveDate: Self.t
        )
        #expect(try roundTrip(extended) == extended)
        #expect(try roundTrip(MassExtendRenewalDateResponse(requestIdentifier: "r")) == .init(requestIdentifier: "r"))
        let massStatus = MassExtendRenewalDateStatusResponse(
            requestIdentifier: "r",
            complete: false,
            completeDate: Self.t,
            succeededCount: 1,
            failedCount: 0
        )
        #expect(try roundTrip(massStatus) == massStatus)
    }

    @Test func serverAPIRequestsRoundTripWithApplesKeys() throws {
        let v1 = ConsumptionRequestV1(
            customerConsented: true,
            consumptionStatus: .partiallyConsumed,
            platform: .apple,
            sampleContentProvided: false,
            deliveryStatus: .didNotDeliverServerOutage,
            appAccountToken: "",
            accountTenure: 4,
            playTime: 5,
            lifetimeDollarsRefunded: 6,
            lifetimeDollarsPurchased: 7,
            userStatus: .limitedAccess,
            refundPreference: .noPreference
        )
        #expect(try roundTrip(v1) == v1)
        #expect(
            try json(v1)
                == #"{"accountTenure":4,"appAccountToken":"","consumptionStatus":2,"customerConsented":true,"#
                + #""deliveryStatus":3,"lifetimeDollarsPurchased":7,"lifetimeDollarsRefunded":6,"platform":1,"#
                + #""playTime":5,"refundPreference":3,"sampleContentProvided":false,"userStatus":4}"#
        )
        let v2 = ConsumptionRequest(
            customerConsented: true,
            sampleContentProvided: true,
            deliveryStatus: .undeliveredWrongItem,
            consumptionPercentage: 25000,
            refundPreference: .grantProrated
        )
        #expect(try roundTrip(v2) == v2)
        #expect(
            try json(v2)
                == #"{"consumptionPercentage":25000,"customerConsented":true,"deliveryStatus":"UNDELIVERED_WRONG_ITEM","#
                + #""refundPreference":"GRANT_PRORATED","sampleContentProvided":true}"#
        )
        let history = NotificationHistoryRequest(
            startDate: Self.t,
            endDate: Self.t.addingTimeInterval(1),
            notificationType: .subscribed,
            notificationSubtype: .initialBuy,
            transactionId: "999",
            onlyFailures: true
        )
        #expect(try roundTrip(history) == history)
        #expect(try json(history).hasPrefix(#"{"endDate":1698148901000,"#))
        let extend = ExtendRenewalDateRequest(
            extendByDays: 45,
            extendReasonCode: .serviceIssueOrOutage,
            requestIdentifier: "r"
        )
        #expect(try json(extend) == #"{"extendByDays":45,"extendReasonCode":3,"requestIdentifier":"r"}"#)
        #expect(try roundTrip(extend) == extend)
        let mass = MassExtendRenewalDateRequest(
            extendByDays: 1,
            extendReasonCode: .customerSatisfaction,
            requestIdentifier: "r",
            storefrontCountryCodes: ["USA", "MEX"],
            productId: "p"
        )
        #expect(try roundTrip(mass) == mass)
        let token = UpdateAppAccountTokenRequest(appAccountToken: "7389a31a-fb6d-4569-a2a6-db7d85d84813")
        #expect(try json(token) == #"{"appAccountToken":"7389a31a-fb6d-4569-a2a6-db7d85d84813"}"#)
        #expect(try roundTrip(token) == token)
    }

    @Test func absentFieldsAreLeftOut() throws {
        #expect(try json(JWSTransactionDecodedPayload()) == "{}")
        #expect(
            try json(JWSTransactionDecodedPayload(transactionId: "1", isUpgraded: false))
                == #"{"isUpgraded":false,"transactionId":"1"}"#
        )
    }
}
