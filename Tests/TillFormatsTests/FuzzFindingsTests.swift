import Foundation
import Testing
import TillCore

@testable import TillFormats

/// The defects the fuzz targets found in TillFormats (docs/fuzzing.md, "Defects found"), each pinned by a test
/// that fails without its fix. The inputs libFuzzer found are kept too, in Tests/TillFuzzingTests/Regressions.
struct FuzzFindingsTests {
    /// `jws`: a payload's `signedDate` is read before the signature is checked, and the chain is checked at that
    /// date. swift-certificates converts the date to a GeneralizedTime with `try!`, and a date past the year 9999
    /// stopped the process: anyone could crash the server with an unsigned notification carrying Apple's `x5c`.
    @Test func aSignedDatePastTheYear9999IsAnInvalidChainNotACrash() async throws {
        let verifier = SignedDataVerifier(.init(anchors: TestAuthorities.jwsAuthority.anchors))
        for milliseconds: Int64 in [9_000_000_000_000_000, 253_402_300_800_000, -62_135_596_800_001] {
            let payload = #"{"transactionId":"1","signedDate":\#(milliseconds)}"#
            let jws = try TestAuthorities.jwsSigner.sign(payloadJSON: Array(payload.utf8))
            let outcome = await verifier.verify(jws, as: JWSTransactionDecodedPayload.self)
            #expect(outcome.failure?.reason == .invalidChain, "\(milliseconds): \(String(describing: outcome.failure))")
        }
        // The last instant of 9999 is still a date a chain is checked at (and this one's is not valid then).
        let validator = ChainValidator(anchors: TestAuthorities.jwsAuthority.anchors, requirements: .receiptSigning)
        let authority = TestAuthorities.jwsAuthority
        let last = await validator.validate(
            leaf: authority.leaf,
            intermediates: [authority.intermediate],
            at: ChainValidator.validationDates.upperBound
        )
        guard case .invalid(let why) = last else { Issue.record("valid in 9999"); return }
        #expect(!why.contains("outside the years"))
    }

    /// `receipt-payload`: an attribute's version was checked with `abs(version) < 1 << 31`, and `abs` traps on the
    /// one eight-byte INTEGER whose magnitude does not fit, -2^63. Any payload (and any receipt, decoded without
    /// verifying by `till inspect --no-verify`, or after a valid signature) could stop the process.
    @Test func anAttributeVersionOfMinusTwoToThe63IsRefusedNotATrap() throws {
        let version: [UInt8] = [0x02, 0x08, 0x80, 0, 0, 0, 0, 0, 0, 0]
        let attribute: [UInt8] = [0x30, 0x12, 0x02, 0x01, 0x02] + version + [0x04, 0x03, 0x0C, 0x01, 0x78]
        let payload: [UInt8] = [0x31, UInt8(attribute.count)] + attribute
        #expect(throws: ASN1Error.integerOutOfRange) {
            try AppReceipt(payload: payload, range: 0..<payload.count)
        }
        // A version of -(2^31 - 1) still fits.
        var fits = payload
        fits[9...16] = [0xFF, 0xFF, 0xFF, 0xFF, 0x80, 0, 0, 1]
        #expect(try AppReceipt(payload: fits, range: 0..<fits.count).bundleId == "x")
    }

    /// `app-receipt`: an in-app purchase's attributes of unknown types kept their version when decoded, and lost it
    /// when encoded (always 1): a decoded receipt did not encode back to itself (the receipt's own unknown attributes
    /// kept theirs).
    @Test func anUnknownPurchaseAttributeKeepsItsVersionThroughARoundTrip() throws {
        var receipt = ReceiptFixtures.receipt(purchases: 1)
        receipt.inAppPurchases[0].otherAttributes = [ReceiptAttribute(type: 1717, version: 2, value: [0x0C, 0x00])]
        let payload = receipt.payloadDER()
        let decoded = try AppReceipt(payload: payload, range: 0..<payload.count)
        #expect(decoded.inAppPurchases[0].otherAttributes.map(\.version) == [2])
        #expect(decoded.payloadDER() == payload)
    }
}
