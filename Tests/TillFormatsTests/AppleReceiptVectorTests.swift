import Foundation
import SwiftASN1
import Testing
import TillCore
import X509

@testable import TillFormats

/// Real Apple-signed receipts (§7.2) and Xcode's (§7.1), with their expected values.
@Suite(.enabled(if: Vectors.shouldRun, Comment(rawValue: Vectors.skipMessage)))
struct AppleReceiptVectorTests {
    static let folder = "third-party/AppReceiptValidator/"

    func receipt(_ name: String) throws -> [UInt8] {
        let bytes = try Vectors.bytes(Self.folder + name)
        return name.hasSuffix(".b64") ? try #require(Base64.decode(bytes, alphabet: .standard)) : bytes
    }

    func verify(_ name: String, _ configuration: ReceiptVerifier.Configuration = .init()) async throws
        -> VerificationOutcome<VerifiedReceipt>
    {
        await ReceiptVerifier(configuration).verify(der: try receipt(name))
    }

    func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
    func date(_ text: String) -> Date { ReceiptDate.parseRFC3339(text)! }

    @Test func sha256MacReceipt() async throws {
        let verified = try #require(
            await verify(
                "mindnode_mac_sha256_receipt",
                .init(bundleId: "com.ideasoncanvas.mindnode.macos", environment: .production, appAppleId: 1_289_197_285)
            ).value
        )
        let r = verified.receipt
        #expect(r.receiptType == "Production")
        #expect(r.appItemId == 1_289_197_285)
        #expect(r.applicationVersion == "2023.2.2")
        #expect(hex(r.opaqueValue) == "566592fca1737c2d6cbdd2a5fdf136f3")
        #expect(r.opaqueValueVersion == 2)
        #expect(hex(r.sha1Hash) == "a83317971dddd06db40a56af795e9da4f3c70d18")
        #expect(r.receiptCreationDate == date("2023-08-28T10:24:05Z"))
        #expect(r.originalPurchaseDate == date("2017-11-28T11:11:32Z"))
        #expect(r.originalApplicationVersion == "5.0")
        #expect(r.matchesDevice(identifier: [0xF8, 0xFF, 0xC2, 0x1E, 0x91, 0x82]))
        #expect(!r.matchesDevice(identifier: [0xF8, 0xFF, 0xC2, 0x1E, 0x91, 0x83]))
        #expect(r.inAppPurchases.count == 3)
        let yearly = try #require(r.inAppPurchases.first { $0.productId.hasSuffix("subscription.yearly") })
        #expect(yearly.transactionId == "710000831465389")
        #expect(yearly.originalTransactionId == "710000831465389")
        #expect(yearly.purchaseDate == date("2021-09-10T12:37:29Z"))
        #expect(yearly.originalPurchaseDate == date("2021-09-10T12:37:34Z"))
        #expect(yearly.expiresDate == date("2022-09-24T12:37:29Z"))
        #expect(yearly.webOrderLineItemId == 710_000_353_660_114)
        #expect(yearly.isTrialPeriod == true)
        #expect(yearly.isInIntroOfferPeriod == false)
        #expect(yearly.productType == .autoRenewable)
        let trial = try #require(r.inAppPurchases.first { $0.productId.hasSuffix("iap.trial") })
        #expect(trial.transactionId == "710000250371060" && trial.productType == .nonConsumable)
        #expect(
            trial.purchaseDate == date("2017-11-28T11:13:57Z") && trial.expiresDate == nil
                && trial.webOrderLineItemId == nil
        )
        #expect(
            r.inAppPurchases.contains {
                $0.productId.hasSuffix("fullversionfree") && $0.transactionId == "710000253893482"
            }
        )
        #expect(verified.chain.certificates.count == 3)
        // Unknown attributes are kept, not dropped.
        #expect(!r.otherAttributes.isEmpty)
    }

    @Test func sha256ReceiptFailsTodayBecauseItsLeafExpired() async throws {
        let result = try await verify(
            "mindnode_mac_sha256_receipt",
            .init(validationTime: date("2026-01-01T00:00:00Z"))
        )
        #expect(result.failure?.reason == .invalidChain)
    }

    @Test func sandboxSHA1ReceiptWithG7Intermediate() async throws {
        let verified = try #require(
            await verify(
                "purchasing_experiments_sandbox_receipt.b64",
                .init(bundleId: "com.hannesoid.PurchasingExperiments", environment: .sandbox)
            ).value
        )
        let r = verified.receipt
        #expect(r.receiptType == "ProductionSandbox" && r.environment == .sandbox)
        #expect(r.applicationVersion == "1" && r.originalApplicationVersion == "1.0")
        #expect(hex(r.opaqueValue) == "08f62ecb7b2cb26d8e424b390df6afd5")
        #expect(r.receiptCreationDate == date("2023-02-22T14:30:15Z"))
        let guid = try #require(Base64.decode("5hgQmGLdQz+7lGddOBXSYw==", alphabet: .standard))
        #expect(r.matchesDevice(identifier: guid))
        let subscription = try #require(r.inAppPurchases.first { $0.transactionId == "2000000284164527" })
        #expect(subscription.expiresDate == date("2023-02-22T14:34:39Z"))
        #expect(subscription.webOrderLineItemId == 2_000_000_021_470_597 && subscription.productTypeCode == 3)
        #expect(r.inAppPurchases.contains { $0.transactionId == "2000000284164152" && $0.productTypeCode == 0 })
        // A sandbox receipt is not a production one.
        #expect(
            try await verify("purchasing_experiments_sandbox_receipt.b64", .init(environment: .production)).failure?
                .reason == .invalidEnvironment
        )
        #expect(
            try await verify("purchasing_experiments_sandbox_receipt.b64", .init(bundleId: "com.other")).failure?.reason
                == .invalidAppIdentifier
        )
    }

    @Test func macReceiptsWithThe2013Intermediate() async throws {
        let one = try #require(await verify("hannes_mac_mindnode_receipt").value).receipt
        #expect(one.bundleId == "com.ideasoncanvas.MindNodeMac" && one.applicationVersion == "2.5.5")
        #expect(one.receiptCreationDate == date("2017-09-04T09:01:20Z") && one.inAppPurchases.isEmpty)
        #expect(one.opaqueValue == Base64.decode("mjF2f4xnFu/L4J3msJ1fxQ==", alphabet: .standard))
        #expect(one.sha1Hash == Base64.decode("gfM0Izu/eKMBRLbJqlTXtNvvmss=", alphabet: .standard))
        #expect(one.matchesDevice(identifier: Base64.decode("bEAItZRe", alphabet: .standard)!))

        let three = try #require(await verify("mac_mindnode_rebought_receipt").value).receipt
        #expect(three.receiptCreationDate == date("2017-09-04T14:45:30Z"))
        #expect(three.opaqueValue == Base64.decode("VzgcF3QeYC6RGBfGC5rP+A==", alphabet: .standard))
        #expect(three.sha1Hash == Base64.decode("fqauHWwZo7XrxhQJcksK447Fzvg=", alphabet: .standard))
    }

    @Test func aReceiptCheckedAgainstAnotherRootIsRefused() async throws {
        let two = try #require(await verify("hannes_mac_mindnode_2_receipt").value).receipt
        #expect(two.applicationVersion == "2.5.8" && two.originalApplicationVersion == "2.5.5")
        #expect(two.receiptCreationDate == date("2023-02-22T12:56:25Z"))
        // frank4dd's CA has a 1024-bit RSA key, which swift-certificates refuses to load as a root at all;
        // a verifier whose only root is unrelated refuses the receipt.
        let frank = try Vectors.bytes(Self.folder + "frank4dd-cacert.der")
        #expect(throws: (any Error).self) { try TrustAnchors.certificates(fromFile: frank) }
        let unrelated = TestAuthorities.receiptAuthority.root
        let result = try await verify("hannes_mac_mindnode_2_receipt", .init(anchors: TrustAnchors(roots: [unrelated])))
        #expect(result.failure?.reason == .invalidChain)
    }

    @Test func iOSSandboxReceiptsAndTheirDeviceHashes() async throws {
        let one = try #require(await verify("mindnode_ios_michaelsandbox_receipt1.b64").value).receipt
        #expect(one.receiptType == "ProductionSandbox" && one.bundleId == "com.mindnode.mindnodetouch")
        #expect(one.applicationVersion == "3394" && one.originalApplicationVersion == "1.0")
        #expect(one.receiptCreationDate == date("2017-09-11T09:38:34Z"))
        let device = try #require(UUID(uuidString: "3B76A7BD-8F5B-46A4-BCB1-CCE8DBD1B3CD"))
        #expect(one.matchesDevice(vendorIdentifier: device))

        let two = try #require(await verify("mindnode_ios_michaelsandbox_receipt2.b64").value).receipt
        #expect(two.applicationVersion == "3392" && two.receiptCreationDate == date("2017-08-16T13:13:14Z"))
        #expect(!two.matchesDevice(vendorIdentifier: device))
    }

    @Test func grandUnifiedReceiptOf2015() async throws {
        let verified = try #require(
            await verify(
                "grandUnifiedExpiredAppleCert_receipt.b64",
                .init(bundleId: "com.mbaasy.ios.demo", environment: .sandbox)
            ).value
        )
        let r = verified.receipt
        #expect(r.appItemId == 0 && r.applicationVersion == "1" && r.originalApplicationVersion == "1.0")
        #expect(r.receiptCreationDate == date("2015-08-13T07:50:46Z"))
        #expect(r.originalPurchaseDate == date("2013-08-01T07:00:00Z"))
        #expect(hex(r.opaqueValue) == "c4dd4054b0b61a07beb585f6a842e048")
        #expect(hex(r.sha1Hash) == "2e0a115beac1c57023a5bd37349955a9ad99db4d")
        #expect(r.inAppPurchases.count == 7)
        let consumable = try #require(r.inAppPurchases.first { $0.productTypeCode == 1 })
        #expect(consumable.transactionId == "1000000166865231" && consumable.webOrderLineItemId == nil)
        #expect(consumable.purchaseDate == date("2015-08-07T20:37:55Z"))
        let monthly: [InAppPurchase] = r.inAppPurchases.filter { $0.productId == "monthly" }
            .sorted { ($0.expiresDate ?? .distantPast) < ($1.expiresDate ?? .distantPast) }
        let ids: [String] = monthly.map { $0.transactionId }
        let expectedIds: [String] = [
            "1000000166965150", "1000000166965327", "1000000166965895", "1000000166967152", "1000000166967484",
            "1000000166967782",
        ]
        #expect(ids == expectedIds)
        #expect(monthly.allSatisfy { $0.originalTransactionId == "1000000166965150" })
        let orders: [Int64?] = monthly.map { $0.webOrderLineItemId }
        let expectedOrders: [Int64?] = [
            1_000_000_030_274_153, 1_000_000_030_274_154, 1_000_000_030_274_165, 1_000_000_030_274_192,
            1_000_000_030_274_219, 1_000_000_030_274_249,
        ]
        #expect(orders == expectedOrders)
        #expect(
            monthly.first?.expiresDate == date("2015-08-10T06:54:32Z")
                && monthly.last?.expiresDate == date("2015-08-10T07:19:32Z")
        )
        #expect(verified.chain.leaf.subject.description.contains("Mac App Store Receipt Signing"))
    }

    @Test func notAReceiptAndATransactionReceiptAreRefused() async throws {
        #expect(try await verify("not_a_receipt").failure?.reason == .invalidFormat)
        #expect(try await verify("deprecatedSinglesTypeExpiredAppleCert_receipt.b64").failure?.reason == .invalidFormat)
    }

    @Test func xcodeReceiptsAreBERAndVerifyWithTheirOwnCertificateOnly() async throws {
        let bytes = try Vectors.bytes("apple-library/xcode/xcode-app-receipt-with-transaction")
        let der = try #require(Base64.decode(bytes, alphabet: .standard))
        #expect(der.starts(with: [0x30, 0x80]))
        let container = try PKCS7Container(der)
        let storeKit = try Certificate(derEncoded: container.certificates[0])
        let verifier = ReceiptVerifier(
            .init(
                anchors: TrustAnchors(roots: [storeKit]),
                bundleId: "com.example.naturelab.backyardbirds.example",
                environment: .xcode
            )
        )
        let outcome = await verifier.verify(der: der)
        let r = try #require(outcome.value, "\(String(describing: outcome.failure))").receipt
        #expect(r.receiptType == "Xcode" && r.appItemId == 0 && r.applicationVersion == "1")
        #expect(
            hex(r.opaqueValue) == "f2bff5fb0f000000" && hex(r.sha1Hash) == "1653abcba0767179556568e83f5041b638e29a85"
        )
        #expect(
            r.receiptCreationDate == date("2023-10-19T01:45:40Z") && r.expirationDate == date("4001-01-01T00:00:00Z")
        )
        let purchase = try #require(r.inAppPurchases.first)
        #expect(r.inAppPurchases.count == 1 && purchase.productId == "pass.premium" && purchase.transactionId == "0")
        #expect(
            purchase.purchaseDate == date("2023-10-19T01:45:36Z")
                && purchase.expiresDate == date("2023-11-19T01:45:36Z")
        )
        #expect(purchase.isInIntroOfferPeriod == true && purchase.originalTransactionId == nil)
        // Apple's roots do not vouch for Xcode's certificate.
        #expect(await ReceiptVerifier(.init()).verify(der: der).failure?.reason == .invalidChain)

        let empty = try #require(
            Base64.decode(try Vectors.bytes("apple-library/xcode/xcode-app-receipt-empty"), alphabet: .standard)
        )
        let emptyReceipt = try #require(await verifier.verify(der: empty).value).receipt
        #expect(emptyReceipt.inAppPurchases.isEmpty && emptyReceipt.receiptCreationDate == date("2023-10-19T01:18:54Z"))
        #expect(hex(emptyReceipt.opaqueValue) == "d1bcfecf04000000")
    }
}
