import Foundation
import Testing
import TillCore
import X509

@testable import TillFormats

/// The limits on hostile input (docs/fuzzing.md, "Resource bounds"): each one lets its largest legitimate input
/// through and refuses one more, with the stable reason `tooLarge` (or the parser's `tooDeep`).
struct ResourceBoundsTests {
    static let authority = TestAuthorities.receiptAuthority

    func verifier(_ configure: (inout ReceiptVerifier.Configuration) -> Void = { _ in }) -> ReceiptVerifier {
        var configuration = ReceiptVerifier.Configuration(anchors: Self.authority.anchors)
        configure(&configuration)
        return ReceiptVerifier(configuration)
    }

    /// A receipt of `count` purchases with only a product and a transaction id each (the most a size allows).
    static func minimal(purchases count: Int) -> AppReceipt {
        var receipt = ReceiptFixtures.receipt(purchases: 0)
        receipt.inAppPurchases = (0..<count).map { InAppPurchase(productId: "p", transactionId: String($0)) }
        return receipt
    }

    @Test func aReceiptHoldsAtMost4096Purchases() async throws {
        let signer = try ReceiptFixtures.signer()
        let atLimit = try signer.sign(Self.minimal(purchases: 4_096))
        let over = try signer.sign(Self.minimal(purchases: 4_097))
        let outcome = await verifier().verify(der: atLimit)
        #expect(outcome.failure == nil, "\(String(describing: outcome.failure))")
        let refused = await verifier().verify(der: over)
        #expect(refused.failure?.reason == .tooLarge)
        #expect(refused.failure?.detail.contains("4096 in-app purchases") == true)
        #expect(throws: ASN1Error.tooManyPurchases(limit: 4_096)) {
            try ReceiptVerifier.decodeWithoutVerifying(der: over)
        }
        #expect(
            try ReceiptVerifier.decodeWithoutVerifying(der: over, maximumPurchases: 5_000).inAppPurchases.count == 4_097
        )
        // The limit is the verifier's to set.
        #expect(await verifier { $0.maximumPurchases = 10 }.verify(der: atLimit).failure?.reason == .tooLarge)
    }

    @Test func aReceiptEmbedsAtMostEightCertificates() async throws {
        let strangers = try (0..<7).map { _ in try TestPKI.makeAuthority(kind: .rsa2048, name: "Stranger").root }
        let authority = Self.authority
        func sign(_ extra: Int) throws -> [UInt8] {
            try ReceiptSigner(
                key: authority.leafKey.rsa!,
                certificates: [authority.leaf, authority.intermediate] + strangers.prefix(extra)
            ).sign(ReceiptFixtures.receipt(purchases: 1))
        }
        // Eight are read (and found not to be part of the chain); nine are refused before any is decoded.
        let eight = await verifier().verify(der: try sign(6))
        #expect(eight.failure?.reason == .invalidChain, "\(String(describing: eight.failure))")
        let nine = await verifier().verify(der: try sign(7))
        #expect(nine.failure?.reason == .tooLarge)
        #expect(nine.failure?.detail == "the receipt embeds more than 8 certificates")
        #expect(throws: ASN1Error.tooManyCertificates(limit: 8)) {
            try ReceiptVerifier.decodeWithoutVerifying(der: sign(7))
        }
    }

    @Test func aReceiptNestsAtMost32Levels() async throws {
        // Indefinite-length wrappers around the content: the reader follows them level by level.
        func nested(_ depth: Int) -> [UInt8] {
            var bytes: [UInt8] = [0x04, 0x01, 0x00]
            for _ in 0..<depth { bytes = [0x30, 0x80] + bytes + [0x00, 0x00] }
            return bytes
        }
        #expect(throws: ASN1Error.tooDeep) { try ASN1Reader(nested(40)).element(at: 0, limit: nested(40).count) }
        #expect(throws: Never.self) { try ASN1Reader(nested(32)).element(at: 0, limit: nested(32).count) }
        let outcome = await verifier().verify(der: nested(10_000))
        #expect(outcome.failure?.reason == .invalidFormat)
        #expect(outcome.failure?.detail.contains("nesting too deep") == true)
    }

    @Test func aJWSIsAtMost256KiBAndItsJSONNestsAtMost64Levels() async throws {
        let verifier = SignedDataVerifier(.init(anchors: TestAuthorities.jwsAuthority.anchors))
        let long = [UInt8](repeating: UInt8(ascii: "A"), count: 256 * 1024 + 1)
        let outcome = await verifier.verify(bytes: long, as: JWSTransactionDecodedPayload.self)
        #expect(outcome.failure?.reason == .tooLarge)
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: JSONTapeError.tooDeep) { try JSONTape(Array(deep.utf8)) }
        let payload = #"{"a":"# + deep + "}"
        let signed = try TestAuthorities.jwsSigner.sign(payloadJSON: Array(payload.utf8))
        let refused = await verifier.verify(signed, as: JWSTransactionDecodedPayload.self)
        #expect(refused.failure?.reason == .malformedPayload)
        #expect(refused.failure?.detail.contains("nested too deeply") == true)
    }
}
