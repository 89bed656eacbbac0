import Foundation
import Testing

@testable import TillFormats

/// The fast decoder of signed payloads must agree with Foundation's on every fixture, and refuse what
/// RFC 8259 refuses.
struct TapeDecoderTests {
    func agree<T: Decodable & Equatable>(
        _ type: T.Type,
        _ bytes: [UInt8],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let foundation = try AppleJSON.makeDecoder().decode(T.self, from: Data(bytes))
        let tape = try TapeDecoder.decode(T.self, from: bytes)
        #expect(tape == foundation, sourceLocation: sourceLocation)
    }

    @Test(.enabled(if: Vectors.shouldRun, Comment(rawValue: Vectors.skipMessage)))
    func agreesWithFoundationOnApplesModels() throws {
        let models = "apple-library/models/"
        try agree(JWSTransactionDecodedPayload.self, Vectors.bytes(models + "signedTransaction.json"))
        try agree(JWSTransactionDecodedPayload.self, Vectors.bytes(models + "signedTransactionWithRevocation.json"))
        try agree(JWSRenewalInfoDecodedPayload.self, Vectors.bytes(models + "signedRenewalInfo.json"))
        try agree(AppTransaction.self, Vectors.bytes(models + "appTransaction.json"))
        for name in [
            "signedNotification", "signedSummaryNotification", "signedExternalPurchaseTokenNotification",
            "signedConsumptionRequestNotification", "signedRescindConsentNotification",
        ] {
            try agree(ResponseBodyV2DecodedPayload.self, Vectors.bytes(models + name + ".json"))
        }
    }

    @Test func agreesOnXcodeFractionalDatesEscapesAndNesting() throws {
        let json = #"""
            {"transactionId":"0","purchaseDate":1697679936049.7297,"expiresDate":1700358336049,
             "productId":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/","quantity":1,"isUpgraded":false,
             "commitmentInfo":{"billingPeriodNumber":2,"totalBillingPeriods":12},"unknown":[1,{"a":null},[]],
             "environment":"Xcode","revocationReason":null}
            """#
        try agree(JWSTransactionDecodedPayload.self, Array(json.utf8))
        let decoded = try TapeDecoder.decode(JWSTransactionDecodedPayload.self, from: Array(json.utf8))
        #expect(decoded.purchaseDate == Date(millisecondsSince1970: 1_697_679_936_049))
        #expect(decoded.productId == "café 😀 \"q\" \\ /")
    }

    @Test func integralNumbersWithAFractionDecodeAsIntegersLikeFoundation() throws {
        struct Count: Decodable, Equatable { var quantity: Int }
        try agree(Count.self, Array(#"{"quantity":1.0}"#.utf8))
        try agree(Count.self, Array(#"{"quantity":2e1}"#.utf8))
        #expect(throws: (any Error).self) { try TapeDecoder.decode(Count.self, from: Array(#"{"quantity":1.5}"#.utf8)) }
    }

    @Test(arguments: [
        #"{"a":1,}"#, #"{"a":01}"#, #"{"a":1.}"#, #"{"a":.5}"#, #"{"a":-}"#, #"{"a":tru}"#, #"{"a":"\x"}"#,
        #"{"a":"\u12"}"#, "{\"a\":\"\u{01}\"}", #"{"a" 1}"#, #"{"a":1}}"#, #"[1,]"#, #"{"a":1,"a":2}"#,
        #"{"bundleId":"x","bundle\u0049d":"y"}"#, "", " ", #"{"a":"unterminated}"#,
    ])
    func refusesInvalidJSON(_ text: String) {
        #expect(throws: (any Error).self) { try JSONTape(Array(text.utf8)) }
    }

    @Test func refusesDeepNestingWithoutRecursingForever() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONTapeError.tooDeep) { try JSONTape(Array(deep.utf8)) }
    }

    @Test func findsDuplicatesInLargeObjects() {
        let members = (0..<200).map { "\"k\($0)\":\($0)" } + ["\"k7\":0"]
        #expect(throws: JSONTapeError.duplicateKey("k7")) {
            try JSONTape(Array("{\(members.joined(separator: ","))}".utf8))
        }
    }
}
