import Testing
import TillFormats

struct ServerAPIErrorCodeTests {
    @Test func everyListedCodeMapsToItsHTTPStatus() {
        #expect(ServerAPIErrorCode.known.count == 89)
        #expect(Set(ServerAPIErrorCode.known.map(\.code)).count == 89)
        #expect(Set(ServerAPIErrorCode.known.map(\.name)).count == 89)
        for (code, name) in ServerAPIErrorCode.known {
            #expect([400, 403, 404, 409, 429, 500].contains(code.httpStatus), "\(name)")
            #expect(String(code.rawValue).hasPrefix(String(code.httpStatus)), "\(name)")
            #expect(code.name == name)
        }
        #expect(ServerAPIErrorCode.invalidTransactionId.rawValue == 4_000_006)
        #expect(ServerAPIErrorCode.subscriptionMaxExtension.httpStatus == 403)
        #expect(ServerAPIErrorCode.appTransactionDoesNotExist.httpStatus == 404)
        #expect(ServerAPIErrorCode.messageAlreadyExists.httpStatus == 409)
        #expect(ServerAPIErrorCode.generalInternalRetryable.httpStatus == 500)
    }

    @Test func messagesAreApplesOrTheNameAsASentence() {
        #expect(ServerAPIErrorCode.invalidTransactionId.message == "Invalid transaction id.")
        #expect(ServerAPIErrorCode.invalidExtendByDays.message == "Invalid extend by days.")
        #expect(ServerAPIErrorCode.invalidAppAccountToken.message == "Invalid app account token.")
        #expect(ServerAPIErrorCode.rateLimitExceeded.message == "Rate limit exceeded.")
        #expect(ServerAPIErrorCode(rawValue: 1_234_567).message == "An unknown error occurred.")
        #expect(APIError(.invalidSort) == APIError(errorCode: 4_000_021, errorMessage: "Invalid sort."))
    }

    @Test func retryableCodesAreTheOnesAppleMarks() {
        let retryable = ServerAPIErrorCode.known.map(\.code).filter(\.isRetryable)
        #expect(
            retryable == [
                .accountNotFoundRetryable, .appNotFoundRetryable, .originalTransactionIdNotFoundRetryable,
                .rateLimitExceeded, .generalInternalRetryable,
            ]
        )
        #expect(!ServerAPIErrorCode.accountNotFound.isRetryable)
    }

    @Test func errorBodyEncodesApplesKeys() throws {
        #expect(
            try json(APIError(.transactionIdNotFound))
                == #"{"errorCode":4040010,"errorMessage":"Transaction id not found."}"#
        )
    }
}
