import Foundation
import Testing
import TillCore
import TillFormats

/// verifyReceipt's answer for an iOS 6-style transaction receipt (apple-formats §3.6).
struct TransactionReceiptResponseTests {
    static let input = #"""
        {"status":0,"environment":"Sandbox","auto_renew_status":1,"auto_renew_product_id":"yearly",
         "expiration_intent":"1","is_in_billing_retry_period":"0","cancellation_reason":"1",
         "latest_receipt":"ewoJInNpZ25hdHVyZSIgPSAi",
         "receipt":{"bid":"com.mbaasy.ios.demo","bvrs":"1","item_id":"1017934151","app_item_id":"0",
          "product_id":"yearly","transaction_id":"1000000181298734","original_transaction_id":"1000000180636226",
          "purchase_date":"2015-11-24 05:34:41 Etc/GMT","purchase_date_ms":"1448343281000",
          "purchase_date_pst":"2015-11-23 21:34:41 America/Los_Angeles",
          "original_purchase_date":"2015-11-20 06:34:41 Etc/GMT","original_purchase_date_ms":"1448001281000",
          "original_purchase_date_pst":"2015-11-19 22:34:41 America/Los_Angeles","quantity":"1",
          "unique_identifier":"0ef6e9a0a7e0e0e5","unique_vendor_identifier":"AB9D3B7E-2B84-4F3F-9E0D-000000000000",
          "version_external_identifier":"0","web_order_line_item_id":"1000000030938713",
          "expires_date":"1448346881000","expires_date_formatted":"2015-11-24 06:34:41 Etc/GMT",
          "expires_date_formatted_pst":"2015-11-23 22:34:41 America/Los_Angeles",
          "is_trial_period":"false","is_in_intro_offer_period":"false","in_app_ownership_type":"PURCHASED"},
         "latest_receipt_info":{"bid":"com.mbaasy.ios.demo","product_id":"yearly","transaction_id":"1000000181298999",
          "expires_date":"1479882881000"}}
        """#

    @Test func decodesTheFlattenedPurchaseInfo() throws {
        let response = try AppleJSON.makeDecoder().decode(VerifyReceiptResponse.self, from: Data(Self.input.utf8))
        #expect(response.receipt == nil)
        #expect(response.latestReceiptInfo == nil)
        let receipt = try #require(response.transactionReceipt)
        #expect(receipt.bid == "com.mbaasy.ios.demo")
        #expect(receipt.bvrs == "1")
        #expect(receipt.itemId == "1017934151")
        #expect(receipt.transactionId == "1000000181298734")
        #expect(receipt.originalTransactionId == "1000000180636226")
        #expect(receipt.purchaseDate == Date(millisecondsSince1970: 1_448_343_281_000))
        #expect(receipt.originalPurchaseDate == Date(millisecondsSince1970: 1_448_001_281_000))
        #expect(receipt.quantity == 1)
        #expect(receipt.expiresDate == Date(millisecondsSince1970: 1_448_346_881_000))
        #expect(receipt.webOrderLineItemId == "1000000030938713")
        #expect(receipt.isTrialPeriod == false)
        #expect(receipt.inAppOwnershipType == .purchased)
        #expect(response.latestTransactionReceiptInfo?.transactionId == "1000000181298999")
        #expect(response.latestTransactionReceiptInfo?.expiresDate == Date(millisecondsSince1970: 1_479_882_881_000))
        #expect(response.autoRenewStatus == .on)
        #expect(response.autoRenewProductId == "yearly")
        #expect(response.expirationIntent == .customerCancelled)
        #expect(response.isInBillingRetryPeriod == false)
        #expect(response.cancellationReason == .appIssue)
    }

    @Test func reEncodesInTheSameShape() throws {
        let response = try AppleJSON.makeDecoder().decode(VerifyReceiptResponse.self, from: Data(Self.input.utf8))
        let text = try json(response)
        #expect(text.contains(#""auto_renew_status":1,"#))
        #expect(text.contains(#""expiration_intent":"1""#))
        #expect(text.contains(#""is_in_billing_retry_period":"0""#))
        #expect(
            text.contains(#""expires_date":"1448346881000","expires_date_formatted":"2015-11-24 06:34:41 Etc/GMT","#)
        )
        #expect(text.contains(#""expires_date_formatted_pst":"2015-11-23 22:34:41 America/Los_Angeles""#))
        #expect(text.contains(#""latest_receipt_info":{"bid":"com.mbaasy.ios.demo","expires_date":"1479882881000""#))
        #expect(text.contains(#""purchase_date_pst":"2015-11-23 21:34:41 America/Los_Angeles""#))
        #expect(try roundTrip(response) == response)
    }
}
