import Foundation
import Testing
import TillCore
import TillFormats

/// Apple's App Store Server API response and error fixtures decode to the values Apple's client tests assert.
@Suite(.enabled(if: Fixtures.shouldRun, Fixtures.skipReason))
struct ServerAPIFixtureTests {
    @Test func allSubscriptionStatuses() throws {
        let response = try Fixtures.model(StatusResponse.self, "getAllSubscriptionStatusesResponse")
        #expect(response.environment == .localTesting)
        #expect(response.bundleId == "com.example")
        #expect(response.appAppleId == 5_454_545)
        let groups = try #require(response.data)
        #expect(groups.map(\.subscriptionGroupIdentifier) == ["sub_group_one", "sub_group_two"])
        #expect(
            groups[0].lastTransactions == [
                LastTransactionsItem(
                    status: .active,
                    originalTransactionId: "3749183",
                    signedTransactionInfo: "signed_transaction_one",
                    signedRenewalInfo: "signed_renewal_one"
                ),
                LastTransactionsItem(
                    status: .revoked,
                    originalTransactionId: "5314314134",
                    signedTransactionInfo: "signed_transaction_two",
                    signedRenewalInfo: "signed_renewal_two"
                ),
            ]
        )
        #expect(groups[1].lastTransactions?.map(\.status) == [.expired])
        #expect(groups[1].lastTransactions?.first?.signedRenewalInfo == "signed_renewal_three")
    }

    @Test func transactionHistory() throws {
        let response = try Fixtures.model(HistoryResponse.self, "transactionHistoryResponse")
        #expect(response.revision == "revision_output")
        #expect(response.hasMore == true)
        #expect(response.bundleId == "com.example")
        #expect(response.appAppleId == 323_232)
        #expect(response.environment == .localTesting)
        #expect(response.signedTransactions == ["signed_transaction_value", "signed_transaction_value2"])
    }

    @Test func historyWithUnknownEnvironmentKeepsTheRawValue() throws {
        let response = try Fixtures.model(HistoryResponse.self, "transactionHistoryResponseWithMalformedEnvironment")
        #expect(response.environment?.rawValue == "LocalTestingxxx")
        #expect(response.environment?.isKnown == false)
        #expect(response.appAppleId == 323_232)
    }

    @Test func historyWithNonNumericAppAppleIdIsRejected() {
        #expect(throws: DecodingError.self) {
            try Fixtures.model(HistoryResponse.self, "transactionHistoryResponseWithMalformedAppAppleId")
        }
    }

    @Test func singleSignedValueResponses() throws {
        #expect(
            try Fixtures.model(TransactionInfoResponse.self, "transactionInfoResponse").signedTransactionInfo
                == "signed_transaction_info_value"
        )
        #expect(
            try Fixtures.model(AppTransactionInfoResponse.self, "appTransactionInfoResponse").signedAppTransactionInfo
                == "signed_app_transaction_info_value"
        )
        #expect(
            try Fixtures.model(SendTestNotificationResponse.self, "requestTestNotificationResponse")
                .testNotificationToken
                == "ce3af791-365e-4c60-841b-1674b43c1609"
        )
        #expect(
            try Fixtures.model(MassExtendRenewalDateResponse.self, "extendRenewalDateForAllActiveSubscribersResponse")
                .requestIdentifier == "758883e8-151b-47b7-abd0-60c4d804c2f5"
        )
    }

    @Test func orderLookup() throws {
        let response = try Fixtures.model(OrderLookupResponse.self, "lookupOrderIdResponse")
        #expect(response.status == .invalid)
        #expect(response.signedTransactions == ["signed_transaction_one", "signed_transaction_two"])
    }

    @Test func refundHistory() throws {
        let response = try Fixtures.model(RefundHistoryResponse.self, "getRefundHistoryResponse")
        #expect(response.signedTransactions == ["signed_transaction_one", "signed_transaction_two"])
        #expect(response.revision == "revision_output")
        #expect(response.hasMore == true)
    }

    @Test func extendRenewalDate() throws {
        let response = try Fixtures.model(ExtendRenewalDateResponse.self, "extendSubscriptionRenewalDateResponse")
        #expect(response.originalTransactionId == "2312412")
        #expect(response.webOrderLineItemId == "9993")
        #expect(response.success == true)
        #expect(response.effectiveDate == ms(1_698_148_900_000))
    }

    @Test func massExtensionStatus() throws {
        let response = try Fixtures.model(
            MassExtendRenewalDateStatusResponse.self,
            "getStatusOfSubscriptionRenewalDateExtensionsResponse"
        )
        #expect(response.requestIdentifier == "20fba8a0-2b80-4a7d-a17f-85c1854727f8")
        #expect(response.complete == true)
        #expect(response.completeDate == ms(1_698_148_900_000))
        #expect(response.succeededCount == 30)
        #expect(response.failedCount == 2)
    }

    @Test func testNotificationStatus() throws {
        let response = try Fixtures.model(CheckTestNotificationResponse.self, "getTestNotificationStatusResponse")
        #expect(response.signedPayload == "signed_payload")
        #expect(
            response.sendAttempts == [
                SendAttemptItem(attemptDate: ms(1_698_148_900_000), sendAttemptResult: .noResponse),
                SendAttemptItem(attemptDate: ms(1_698_148_950_000), sendAttemptResult: .success),
            ]
        )
    }

    @Test func notificationHistory() throws {
        let response = try Fixtures.model(NotificationHistoryResponse.self, "getNotificationHistoryResponse")
        #expect(response.paginationToken == "57715481-805a-4283-8499-1c19b5d6b20a")
        #expect(response.hasMore == true)
        let items = try #require(response.notificationHistory)
        #expect(items.map(\.signedPayload) == ["signed_payload_one", "signed_payload_two"])
        #expect(items[0].sendAttempts?.map(\.sendAttemptResult) == [.noResponse, .success])
        #expect(
            items[1].sendAttempts == [
                SendAttemptItem(attemptDate: ms(1_698_148_800_000), sendAttemptResult: .circularRedirect)
            ]
        )
    }

    @Test(arguments: [
        ("invalidTransactionIdError", 4_000_006, "Invalid transaction id.", 400),
        ("transactionIdNotFoundError", 4_040_010, "Transaction id not found.", 404),
        ("appTransactionDoesNotExistError", 4_040_019, "No AppTransaction exists for the customer.", 404),
        ("apiTooManyRequestsException", 4_290_000, "Rate limit exceeded.", 429),
        ("apiException", 5_000_000, "An unknown error occurred.", 500),
        (
            "invalidAppAccountTokenUUIDError", 4_000_183,
            "Invalid request. The app account token field must be a valid UUID.", 400
        ),
        (
            "familyTransactionNotSupportedError", 4_000_185,
            "Invalid request. Family Sharing transactions aren't supported by this endpoint.", 400
        ),
        (
            "transactionIdNotOriginalTransactionId", 4_000_187,
            "Invalid request. The transaction ID provided is not an original transaction ID.", 400
        ),
    ])
    func errorBodies(name: String, code: Int, message: String, httpStatus: Int) throws {
        let error = try Fixtures.model(APIError.self, name)
        #expect(error.errorCode == code)
        #expect(error.errorMessage == message)
        #expect(error.code.httpStatus == httpStatus)
        #expect(error.code.name != nil)
        #expect(error.code.message == message)
        #expect(APIError(error.code) == error)
    }

    @Test func unknownErrorCodeIsKept() throws {
        let error = try Fixtures.model(APIError.self, "apiUnknownError")
        #expect(error.errorCode == 9_990_000)
        #expect(error.errorMessage == "Testing error.")
        #expect(error.code.name == nil)
        #expect(error.code.httpStatus == 999)
        #expect(try roundTrip(error) == error)
    }
}
