import Foundation
import Testing
import TillCore
import TillFormats

/// Apple's notification fixtures decode to the values of apple-formats §7.1, and each payload
/// takes its identity from the object it carries.
@Suite(.enabled(if: Fixtures.shouldRun, Fixtures.skipReason))
struct NotificationFixtureTests {
    private let uuid = "002e14d5-51f5-4503-b5a8-c3a1af68eb20"

    @Test func subscribedNotificationCarriesData() throws {
        let n = try Fixtures.model(ResponseBodyV2DecodedPayload.self, "signedNotification")
        #expect(n.notificationType == .subscribed)
        #expect(n.subtype == .initialBuy)
        #expect(n.notificationUUID == uuid)
        #expect(n.version == "2.0")
        #expect(n.signedDate == ms(1_698_148_900_000))
        let data = try #require(n.data)
        #expect(data.environment == .localTesting)
        #expect(data.appAppleId == 41234)
        #expect(data.bundleId == "com.example")
        #expect(data.bundleVersion == "1.2.3")
        #expect(data.signedTransactionInfo == "signed_transaction_info_value")
        #expect(data.signedRenewalInfo == "signed_renewal_info_value")
        #expect(data.status == .active)
        #expect(data.consumptionRequestReason == nil)
        #expect(n.summary == nil && n.externalPurchaseToken == nil && n.appData == nil)
        #expect(n.verificationDate == ms(1_698_148_900_000))
        #expect(n.identity == PayloadIdentity(bundleId: "com.example", appAppleId: 41234, environment: .localTesting))
    }

    @Test func consumptionRequestCarriesItsReason() throws {
        let n = try Fixtures.model(ResponseBodyV2DecodedPayload.self, "signedConsumptionRequestNotification")
        #expect(n.notificationType == .consumptionRequest)
        #expect(n.subtype == nil)
        #expect(n.data?.consumptionRequestReason == .unintendedPurchase)
        #expect(n.data?.status == .active)
    }

    @Test func summaryNotificationTakesIdentityFromSummary() throws {
        let n = try Fixtures.model(ResponseBodyV2DecodedPayload.self, "signedSummaryNotification")
        #expect(n.notificationType == .renewalExtension)
        #expect(n.subtype == .summary)
        #expect(n.data == nil)
        let summary = try #require(n.summary)
        #expect(summary.environment == .localTesting)
        #expect(summary.appAppleId == 41234)
        #expect(summary.bundleId == "com.example")
        #expect(summary.productId == "com.example.product")
        #expect(summary.requestIdentifier == "efb27071-45a4-4aca-9854-2a1e9146f265")
        #expect(summary.storefrontCountryCodes == ["CAN", "USA", "MEX"])
        #expect(summary.succeededCount == 5)
        #expect(summary.failedCount == 2)
        #expect(n.identity == PayloadIdentity(bundleId: "com.example", appAppleId: 41234, environment: .localTesting))
    }

    @Test func externalPurchaseTokenEnvironmentComesFromTheIdPrefix() throws {
        let production = try Fixtures.model(
            ResponseBodyV2DecodedPayload.self,
            "signedExternalPurchaseTokenNotification"
        )
        let sandbox = try Fixtures.model(
            ResponseBodyV2DecodedPayload.self,
            "signedExternalPurchaseTokenSandboxNotification"
        )
        #expect(production.notificationType == .externalPurchaseToken)
        #expect(production.subtype == .unreported)
        let token = try #require(sandbox.externalPurchaseToken)
        #expect(token.externalPurchaseId == "SANDBOX_b2158121-7af9-49d4-9561-1f588205523e")
        #expect(token.tokenCreationDate == ms(1_698_148_950_000))
        #expect(token.appAppleId == 55555)
        #expect(token.bundleId == "com.example")
        #expect(production.externalPurchaseToken?.externalPurchaseId == "b2158121-7af9-49d4-9561-1f588205523e")
        #expect(sandbox.identity == PayloadIdentity(bundleId: "com.example", appAppleId: 55555, environment: .sandbox))
        #expect(
            production.identity == PayloadIdentity(bundleId: "com.example", appAppleId: 55555, environment: .production)
        )
    }

    @Test func rescindConsentTakesIdentityFromAppData() throws {
        let n = try Fixtures.model(ResponseBodyV2DecodedPayload.self, "signedRescindConsentNotification")
        #expect(n.notificationType == .rescindConsent)
        let appData = try #require(n.appData)
        #expect(appData.appAppleId == 41234)
        #expect(appData.bundleId == "com.example")
        #expect(appData.environment == .localTesting)
        #expect(appData.signedAppTransactionInfo == "signed_app_transaction_info_value")
        #expect(n.identity == PayloadIdentity(bundleId: "com.example", appAppleId: 41234, environment: .localTesting))
    }

    @Test func appDataFixture() throws {
        let appData = try Fixtures.model(AppData.self, "appData")
        #expect(
            appData
                == AppData(
                    appAppleId: 987_654_321,
                    bundleId: "com.example",
                    environment: .sandbox,
                    signedAppTransactionInfo: "signed-app-transaction-info"
                )
        )
    }

    @Test func mockTestNotificationPayload() throws {
        let n = try Fixtures.jwsPayload(
            ResponseBodyV2DecodedPayload.self,
            "apple-library/mock_signed_data/testNotification"
        )
        #expect(n.notificationType == .test)
        #expect(n.notificationUUID == "9ad56bd2-0bc6-42e0-af24-fd996d87a1e6")
        #expect(n.signedDate == ms(1_681_314_324_000))
        #expect(n.identity == PayloadIdentity(bundleId: "com.example", appAppleId: 1234, environment: .sandbox))
    }

    @Test func mockWrongBundleIdNotificationHasNoSignedDate() throws {
        let n = try Fixtures.jwsPayload(
            ResponseBodyV2DecodedPayload.self,
            "apple-library/mock_signed_data/wrongBundleId"
        )
        #expect(n.notificationType == .test)
        #expect(n.verificationDate == nil)
        #expect(n.identity.bundleId == "com.example.wrong")
    }
}
