import Foundation
import Testing
import TillCore
import TillFormats

struct QueryTests {
    /// The query Apple's client test sends for Get Transaction History (apple-formats §7.1).
    static let appleHistoryQuery =
        "startDate=123455&endDate=123456&productId=com.example.1&productId=com.example.2"
        + "&productType=CONSUMABLE&productType=AUTO_RENEWABLE&sort=ASCENDING"
        + "&subscriptionGroupIdentifier=sub_group_id&subscriptionGroupIdentifier=sub_group_id_2"
        + "&inAppOwnershipType=FAMILY_SHARED&revoked=false&revision=revision_input"

    static let appleHistoryRequest = TransactionHistoryQuery(
        revision: "revision_input",
        startDate: Date(millisecondsSince1970: 123_455),
        endDate: Date(millisecondsSince1970: 123_456),
        productIds: ["com.example.1", "com.example.2"],
        productTypes: [.consumable, .autoRenewable],
        sort: .ascending,
        subscriptionGroupIdentifiers: ["sub_group_id", "sub_group_id_2"],
        inAppOwnershipType: .familyShared,
        revoked: false
    )

    @Test func historyQueryReproducesApplesString() {
        #expect(Self.appleHistoryRequest.queryString == Self.appleHistoryQuery)
        #expect(Self.appleHistoryRequest.queryItems.first! == ("startDate", "123455"))
        #expect(Self.appleHistoryRequest.queryItems.last! == ("revision", "revision_input"))
    }

    @Test func historyQueryParsesBack() throws {
        let parsed = try TransactionHistoryQuery(queryString: Self.appleHistoryQuery)
        #expect(parsed == Self.appleHistoryRequest)
        #expect(parsed.startDate?.millisecondsSince1970 == 123_455)
        #expect(try TransactionHistoryQuery(queryString: "") == TransactionHistoryQuery())
        #expect(TransactionHistoryQuery().queryString == "")
    }

    @Test func historyQueryRevokedTrueAndUnknownNames() throws {
        let parsed = try TransactionHistoryQuery(queryString: "revoked=true&foo=bar&sort=DESCENDING")
        #expect(parsed == TransactionHistoryQuery(sort: .descending, revoked: true))
        #expect(parsed.queryString == "sort=DESCENDING&revoked=true")
    }

    @Test(arguments: [
        ("startDate=yesterday", ServerAPIErrorCode.invalidStartDate),
        ("endDate=12.5", .invalidEndDate),
        // Epoch milliseconds millions of years away: Int64.max as a Date does not convert back to an Int64.
        ("startDate=9223372036854775807", .invalidStartDate),
        ("endDate=-9223372036854775808", .invalidEndDate),
        ("endDate=100000000000000001", .invalidEndDate),
        ("productType=SUBSCRIPTION", .invalidProductType),
        ("sort=RANDOM", .invalidSort),
        ("inAppOwnershipType=BORROWED", .invalidInAppOwnershipType),
        ("revoked=yes", .invalidRevoked),
    ])
    func historyQueryRejectsWhatAppleRejects(query: String, expected: ServerAPIErrorCode) {
        #expect(throws: APIError(expected)) { try TransactionHistoryQuery(queryString: query) }
    }

    /// A date's milliseconds saturate instead of trapping, and Apple's JSON refuses dates millions of years away.
    @Test func millisecondsBeyondInt64SaturateAndFarDatesAreRefused() throws {
        #expect(Date(millisecondsSince1970: .max).millisecondsSince1970 == .max)
        #expect(Date(millisecondsSince1970: .min).millisecondsSince1970 == .min)
        #expect(Date(timeIntervalSince1970: 1e300).millisecondsSince1970 == .max)
        #expect(Date(millisecondsSince1970: 1_697_679_936_049).millisecondsSince1970 == 1_697_679_936_049)
        let decoder = AppleJSON.makeDecoder()
        for json in [#"{"startDate":9223372036854775807}"#, #"{"endDate":-9223372036854775808}"#] {
            #expect(throws: DecodingError.self) {
                try decoder.decode(NotificationHistoryRequest.self, from: Data(json.utf8))
            }
        }
        let sane = try decoder.decode(
            NotificationHistoryRequest.self,
            from: Data(#"{"startDate":-62135769600000}"#.utf8)
        )
        #expect(sane.startDate?.millisecondsSince1970 == -62_135_769_600_000)
    }

    @Test func valuesArePercentEncodedAndDecoded() throws {
        let query = TransactionHistoryQuery(revision: "a&b=c d/é+", productIds: ["x y"])
        #expect(query.queryString == "productId=x%20y&revision=a%26b%3Dc%20d%2F%C3%A9%2B")
        #expect(try TransactionHistoryQuery(queryString: query.queryString) == query)
    }

    @Test func statusQueryKeepsOrderAndRepeats() throws {
        let query = SubscriptionStatusQuery(status: [.expired, .active])
        #expect(query.queryString == "status=2&status=1")
        #expect(try SubscriptionStatusQuery(queryString: "status=2&status=1") == query)
        #expect(try SubscriptionStatusQuery(queryString: "").status.isEmpty)
    }

    @Test func statusQueryRejectsValuesOutsideOneToFive() {
        #expect(throws: APIError(.invalidStatus)) { try SubscriptionStatusQuery(queryString: "status=6") }
        #expect(throws: APIError(.invalidStatus)) { try SubscriptionStatusQuery(queryString: "status=active") }
    }
}
