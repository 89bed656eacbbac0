import Foundation
import Testing
import TillCore
import TillFormats

/// Values Apple adds later must survive decoding and be written back unchanged (STYLE 14).
struct ForwardCompatibilityTests {
    @Test func unknownTransactionValuesSurviveDecodeAndEncode() throws {
        let input = #"""
            {"environment":"Staging","inAppOwnershipType":"GIFTED","offerDiscountType":"BUNDLE",\#
            "offerType":9,"revocationReason":7,"signedDate":1698148900000,"transactionReason":"GIFT",\#
            "type":"Non-Consumable Bundle"}
            """#
        let tx = try AppleJSON.makeDecoder().decode(JWSTransactionDecodedPayload.self, from: Data(input.utf8))
        #expect(tx.environment?.rawValue == "Staging")
        #expect(tx.environment?.isKnown == false)
        #expect(tx.type?.rawValue == "Non-Consumable Bundle")
        #expect(tx.type?.productType == nil)
        #expect(tx.offerType?.rawValue == 9)
        #expect(tx.transactionReason?.rawValue == "GIFT")
        #expect(try json(tx) == input)
    }

    @Test func unknownNotificationTypeAndSubtypeSurvive() throws {
        let input = #"""
            {"data":{"bundleId":"com.example","environment":"Sandbox","status":9},\#
            "notificationType":"SUBSCRIPTION_PAUSED","notificationUUID":"u","subtype":"BY_CUSTOMER","version":"2.1"}
            """#
        let n = try AppleJSON.makeDecoder().decode(ResponseBodyV2DecodedPayload.self, from: Data(input.utf8))
        #expect(n.notificationType?.rawValue == "SUBSCRIPTION_PAUSED")
        #expect(n.notificationType?.isKnown == false)
        #expect(n.subtype?.rawValue == "BY_CUSTOMER")
        #expect(n.data?.status?.rawValue == 9)
        #expect(try json(n) == input)
    }

    @Test func unknownKeysAreIgnored() throws {
        let input = #"""
            {"transactionId":"1","advancedCommerceInfo":{"items":[{"SKU":"x"}]},"brandNewField":[1,2,3],
             "commitmentInfo":{"billingPeriodNumber":1,"somethingElse":true}}
            """#
        let tx = try AppleJSON.makeDecoder().decode(JWSTransactionDecodedPayload.self, from: Data(input.utf8))
        #expect(tx == JWSTransactionDecodedPayload(transactionId: "1", commitmentInfo: .init(billingPeriodNumber: 1)))
    }

    @Test func unknownEnvironmentInAppTransactionAndRenewalInfo() throws {
        let app = try AppleJSON.makeDecoder().decode(AppTransaction.self, from: Data(#"{"receiptType":"Future"}"#.utf8))
        #expect(app.identity.environment?.rawValue == "Future")
        let renewal = try AppleJSON.makeDecoder().decode(
            JWSRenewalInfoDecodedPayload.self,
            from: Data(#"{"autoRenewStatus":2,"environment":"Future","expirationIntent":99}"#.utf8)
        )
        #expect(renewal.autoRenewStatus?.rawValue == 2)
        #expect(renewal.expirationIntent?.rawValue == 99)
        #expect(try json(renewal) == #"{"autoRenewStatus":2,"environment":"Future","expirationIntent":99}"#)
    }

    @Test func valueTypesCompareByRawValue() {
        #expect(TransactionType(rawValue: "Consumable") == .consumable)
        #expect(NotificationType(rawValue: "DID_RENEW") == .didRenew)
        #expect(OfferType(rawValue: 4) == .winBackOffer)
        #expect(TransactionType.nonConsumable.description == "Non-Consumable")
    }
}
