import Foundation
import Testing
import TillCore
import TillFormats

/// verifyReceipt JSON: strings for every in-app value, dates as `_date`/`_ms`/`_pst` triples,
/// hyphenated request keys and `is-retryable`.
struct VerifyReceiptModelTests {
    /// 2015-08-13 07:50:46 UTC, in Pacific daylight time (−7).
    static let summer = Date(millisecondsSince1970: 1_439_452_246_000)
    /// 2015-11-24 06:34:41 UTC, in Pacific standard time (−8).
    static let winter = Date(millisecondsSince1970: 1_448_346_881_000)

    static let subscription = InAppReceiptInfoJSON(
        quantity: 1,
        productId: "monthly",
        transactionId: "1000000166965150",
        originalTransactionId: "1000000166965150",
        purchaseDate: summer,
        originalPurchaseDate: summer,
        expiresDate: winter,
        cancellationDate: winter,
        cancellationReason: .appIssue,
        isTrialPeriod: false,
        isInIntroOfferPeriod: true,
        isUpgraded: false,
        webOrderLineItemId: "1000000030274153",
        promotionalOfferId: "promo",
        offerCodeRefName: "code",
        subscriptionGroupIdentifier: "20000000",
        inAppOwnershipType: .purchased,
        appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138"
    )

    static let response = VerifyReceiptResponse(
        status: .valid,
        environment: .sandbox,
        receipt: ReceiptInfoJSON(
            receiptType: .productionSandbox,
            adamId: 0,
            appItemId: 0,
            bundleId: "com.mbaasy.ios.demo",
            applicationVersion: "1",
            downloadId: 0,
            versionExternalIdentifier: 0,
            receiptCreationDate: summer,
            requestDate: winter,
            originalPurchaseDate: Date(millisecondsSince1970: 1_375_340_400_000),
            originalApplicationVersion: "1.0",
            preorderDate: winter,
            expirationDate: winter,
            inApp: [
                InAppReceiptInfoJSON(
                    quantity: 1,
                    productId: "consumable",
                    transactionId: "1000000166865231",
                    originalTransactionId: "1000000166865231",
                    purchaseDate: summer,
                    originalPurchaseDate: summer,
                    isTrialPeriod: false
                ),
                subscription,
            ]
        ),
        latestReceipt: "MIIT/base64+",
        latestReceiptInfo: [subscription],
        pendingRenewalInfo: [
            PendingRenewalInfoJSON(
                autoRenewProductId: "yearly",
                autoRenewStatus: .off,
                expirationIntent: .billingError,
                gracePeriodExpiresDate: winter,
                isInBillingRetryPeriod: true,
                offerCodeRefName: "code",
                promotionalOfferId: "promo",
                originalTransactionId: "1000000166965150",
                productId: "monthly",
                priceConsentStatus: 1,
                priceIncreaseStatus: .consented
            )
        ]
    )

    @Test func inAppDatesAreWrittenAsTriplesWithApplesSpellings() throws {
        let text = try json(Self.response)
        #expect(text.contains(#""purchase_date":"2015-08-13 07:50:46 Etc/GMT""#))
        #expect(text.contains(#""purchase_date_ms":"1439452246000""#))
        #expect(text.contains(#""purchase_date_pst":"2015-08-13 00:50:46 America/Los_Angeles""#))
        #expect(text.contains(#""expires_date":"2015-11-24 06:34:41 Etc/GMT""#))
        #expect(text.contains(#""expires_date_ms":"1448346881000""#))
        #expect(text.contains(#""expires_date_pst":"2015-11-23 22:34:41 America/Los_Angeles""#))
        #expect(text.contains(#""grace_period_expires_date_pst":"2015-11-23 22:34:41 America/Los_Angeles""#))
        #expect(text.contains(#""receipt_creation_date_ms":"1439452246000""#))
        #expect(text.contains(#""original_purchase_date":"2013-08-01 07:00:00 Etc/GMT""#))
    }

    @Test func inAppNumbersAndBooleansAreStrings() throws {
        let text = try json(Self.subscription)
        #expect(
            text
                == #"{"app_account_token":"7e3fb20b-4cdb-47cc-936d-99d65f608138","#
                + #""cancellation_date":"2015-11-24 06:34:41 Etc/GMT","cancellation_date_ms":"1448346881000","#
                + #""cancellation_date_pst":"2015-11-23 22:34:41 America/Los_Angeles","cancellation_reason":"1","#
                + #""expires_date":"2015-11-24 06:34:41 Etc/GMT","expires_date_ms":"1448346881000","#
                + #""expires_date_pst":"2015-11-23 22:34:41 America/Los_Angeles","in_app_ownership_type":"PURCHASED","#
                + #""is_in_intro_offer_period":"true","is_trial_period":"false","is_upgraded":"false","#
                + #""offer_code_ref_name":"code","original_purchase_date":"2015-08-13 07:50:46 Etc/GMT","#
                + #""original_purchase_date_ms":"1439452246000","#
                + #""original_purchase_date_pst":"2015-08-13 00:50:46 America/Los_Angeles","#
                + #""original_transaction_id":"1000000166965150","product_id":"monthly","promotional_offer_id":"promo","#
                + #""purchase_date":"2015-08-13 07:50:46 Etc/GMT","purchase_date_ms":"1439452246000","#
                + #""purchase_date_pst":"2015-08-13 00:50:46 America/Los_Angeles","quantity":"1","#
                + #""subscription_group_identifier":"20000000","transaction_id":"1000000166965150","#
                + #""web_order_line_item_id":"1000000030274153"}"#
        )
    }

    @Test func receiptIdentifiersAreNumbersAndTopLevelKeysAreApples() throws {
        let text = try json(Self.response)
        #expect(text.hasPrefix(#"{"environment":"Sandbox","latest_receipt":"MIIT/base64+","latest_receipt_info":[{"#))
        #expect(
            text.contains(#""adam_id":0,"app_item_id":0,"application_version":"1","bundle_id":"com.mbaasy.ios.demo""#)
        )
        #expect(text.contains(#""download_id":0"#))
        #expect(text.contains(#""version_external_identifier":0"#))
        #expect(text.contains(#""receipt_type":"ProductionSandbox""#))
        #expect(text.contains(#""auto_renew_status":"0""#))
        #expect(text.contains(#""expiration_intent":"2""#))
        #expect(text.contains(#""is_in_billing_retry_period":"1""#))
        #expect(text.contains(#""price_consent_status":"1""#))
        #expect(text.hasSuffix(#""status":0}"#))
    }

    @Test func responseDecodesBackEqual() throws {
        #expect(try roundTrip(Self.response) == Self.response)
    }

    /// An answer is held across suspensions, in async frames, by the simulator that writes it and the confirmation
    /// that reads it; its four object-sized fields are boxed (`Boxed`): 153 bytes, against 1,105 with them inline,
    /// which made the simulator's verifyReceipt frames tens of kilobytes a call. The budget is the size now, with a
    /// field's room; raising it is a decision.
    @Test func anAnswerStaysSmallEnoughToHoldAcrossASuspension() {
        #expect(MemoryLayout<VerifyReceiptResponse>.size <= 160, "\(MemoryLayout<VerifyReceiptResponse>.size) bytes")
    }

    /// A boxed field reads, writes and compares as the value it holds, and through optional chaining.
    @Test func aBoxedFieldIsItsValue() throws {
        var response = Self.response
        let copy = response
        #expect(response.receipt?.bundleId == Self.response.receipt?.bundleId)
        response.receipt?.bundleId = "com.example.other"
        #expect(response.receipt?.bundleId == "com.example.other")
        #expect(copy.receipt?.bundleId == Self.response.receipt?.bundleId, "a copy keeps its own value")
        #expect(response != copy)
        #expect(Set([response, copy, copy]).count == 2)
        response.receipt = nil
        #expect(response.receipt == nil)
        #expect(try roundTrip(response) == response)
    }

    @Test func retryableStatusUsesTheHyphenatedKey() throws {
        let response = VerifyReceiptResponse(status: ReceiptStatus(21100), isRetryable: true)
        #expect(try json(response) == #"{"is-retryable":true,"status":21100}"#)
        let decoded = try AppleJSON.makeDecoder().decode(
            VerifyReceiptResponse.self,
            from: Data(#"{"status":21199,"is-retryable":false,"is_retryable":true}"#.utf8)
        )
        #expect(decoded.isRetryable == false)
        #expect(decoded.status.action(isRetryable: decoded.isRetryable) == .terminal)
    }

    @Test func decodesApplesShapeAndPrefersMilliseconds() throws {
        let input = #"""
            {"status":0,"environment":"Production","receipt":{"receipt_type":"Production","adam_id":1289197285,
             "app_item_id":1289197285,"bundle_id":"com.example","application_version":"2023.2.2","download_id":502,
             "version_external_identifier":859413117,"receipt_creation_date":"2023-08-28 10:24:05 Etc/GMT",
             "receipt_creation_date_ms":"1693218245000","receipt_creation_date_pst":"2023-08-28 03:24:05 America/Los_Angeles",
             "request_date":"2023-08-28 10:24:07 Etc/GMT","original_application_version":"5.0","unknown_key":{"a":1},
             "in_app":[{"quantity":"2","product_id":"coins","transaction_id":"710000250371060",
               "original_transaction_id":"710000250371060","purchase_date":"2000-01-01 00:00:00 Etc/GMT",
               "purchase_date_ms":"1511867637000","purchase_date_pst":"ignored","is_trial_period":"false",
               "in_app_ownership_type":"FAMILY_SHARED","cancellation_reason":"0"}]}}
            """#
        let response = try AppleJSON.makeDecoder().decode(VerifyReceiptResponse.self, from: Data(input.utf8))
        #expect(response.status == .valid)
        #expect(response.environment == .production)
        #expect(response.transactionReceipt == nil)
        let receipt = try #require(response.receipt)
        #expect(receipt.receiptType == .production)
        #expect(receipt.adamId == 1_289_197_285)
        #expect(receipt.downloadId == 502)
        #expect(receipt.versionExternalIdentifier == 859_413_117)
        #expect(receipt.receiptCreationDate == Date(millisecondsSince1970: 1_693_218_245_000))
        #expect(receipt.requestDate == Date(millisecondsSince1970: 1_693_218_247_000))
        #expect(receipt.originalApplicationVersion == "5.0")
        let entry = try #require(receipt.inApp?.first)
        #expect(entry.quantity == 2)
        #expect(entry.purchaseDate == Date(millisecondsSince1970: 1_511_867_637_000))
        #expect(entry.isTrialPeriod == false)
        #expect(entry.inAppOwnershipType == .familyShared)
        #expect(entry.cancellationReason == .other)
        #expect(entry.expiresDate == nil)
    }

    @Test func malformedValuesAreRejected() {
        let decoder = AppleJSON.makeDecoder()
        #expect(throws: DecodingError.self) {
            try decoder.decode(InAppReceiptInfoJSON.self, from: Data(#"{"purchase_date_ms":"soon"}"#.utf8))
        }
        #expect(throws: DecodingError.self) {
            try decoder.decode(InAppReceiptInfoJSON.self, from: Data(#"{"purchase_date":"13/08/2015"}"#.utf8))
        }
        #expect(throws: DecodingError.self) {
            try decoder.decode(InAppReceiptInfoJSON.self, from: Data(#"{"is_trial_period":"maybe"}"#.utf8))
        }
        #expect(throws: DecodingError.self) {
            try decoder.decode(VerifyReceiptResponse.self, from: Data(#"{"environment":"Sandbox"}"#.utf8))
        }
    }

    @Test func requestUsesHyphenatedKeys() throws {
        let request = VerifyReceiptRequest(receiptData: "MIIT", password: "secret", excludeOldTransactions: true)
        #expect(try json(request) == #"{"exclude-old-transactions":true,"password":"secret","receipt-data":"MIIT"}"#)
        #expect(try roundTrip(request) == request)
    }
}
