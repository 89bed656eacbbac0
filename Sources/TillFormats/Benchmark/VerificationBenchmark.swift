import Foundation
import TillCore

/// Measures full verification on the calling thread: what `till bench` runs.
public enum VerificationBenchmark {
    /// Timings of one benchmark run.
    public struct Result: Sendable, CustomStringConvertible {
        public var name: String
        public var operations: Int
        public var seconds: Double
        public var p50Microseconds: Double
        public var p99Microseconds: Double

        public var operationsPerSecond: Double { Double(operations) / seconds }

        /// `NAME ops_per_sec=… p50_us=… p99_us=…`
        public var description: String {
            "\(name) ops_per_sec=\(Int(operationsPerSecond.rounded())) p50_us=\(format(p50Microseconds)) p99_us=\(format(p99Microseconds))"
        }

        private func format(_ value: Double) -> String { String(format: "%.1f", value) }
    }

    /// Runs `operation` repeatedly for about `duration` after a warm-up, timing each call.
    public static func measure(
        _ name: String, duration: Duration, operation: () async throws -> Bool
    ) async throws -> Result {
        let clock = ContinuousClock()
        let warmUpEnd = clock.now + duration / 10
        while clock.now < warmUpEnd {
            guard try await operation() else { throw BenchmarkError.verificationFailed(name) }
        }
        var samples: [Duration] = []
        samples.reserveCapacity(1 << 20)
        let start = clock.now
        let end = start + duration
        var now = start
        while now < end {
            let before = now
            guard try await operation() else { throw BenchmarkError.verificationFailed(name) }
            now = clock.now
            samples.append(now - before)
        }
        let total = now - start
        samples.sort()
        func percentile(_ p: Double) -> Double {
            let sample = samples[min(samples.count - 1, Int(Double(samples.count) * p))]
            return Double(sample.components.attoseconds) / 1e12 + Double(sample.components.seconds) * 1e6
        }
        return Result(
            name: name, operations: samples.count,
            seconds: Double(total.components.seconds) + Double(total.components.attoseconds) / 1e18,
            p50Microseconds: percentile(0.50), p99Microseconds: percentile(0.99))
    }

    /// Full verification of an app receipt with `purchases` in-app purchases: CMS signature (RSA-2048,
    /// SHA-256), certificate chain (cached by certificate bytes) and decoding of every field.
    public static func receipts(purchases: Int = 10, duration: Duration = .seconds(5)) async throws -> Result {
        let authority = try TestPKI.makeAuthority(kind: .rsa2048, name: "Bench Receipts")
        let receipt = sampleReceipt(purchases: purchases)
        let der = try ReceiptSigner(key: authority.leafKey.rsa!, certificates: authority.chain).sign(receipt)
        let verifier = ReceiptVerifier(.init(anchors: authority.anchors, bundleId: "com.example.till", environment: .sandbox))
        return try await measure("receipt", duration: duration) {
            guard case .valid(let verified) = await verifier.verify(der: der) else { return false }
            return verified.receipt.inAppPurchases.count == purchases
        }
    }

    /// A sandbox receipt shaped like the App Store's, including the attributes Apple writes but does not document.
    public static func sampleReceipt(purchases: Int, bundleId: String = "com.example.till") -> AppReceipt {
        let created = Date(timeIntervalSince1970: 1_700_000_000)
        let undocumented: [ReceiptAttribute] = [
            ReceiptAttribute(type: 1709, value: ReceiptValue.utf8String("")),
            ReceiptAttribute(type: 1710, value: ReceiptValue.integer(0)),
            ReceiptAttribute(type: 1714, value: ReceiptValue.utf8String("")),
            ReceiptAttribute(type: 1715, value: ReceiptValue.utf8String("")),
            ReceiptAttribute(type: 1716, value: ReceiptValue.utf8String("")),
            ReceiptAttribute(type: 1717, value: ReceiptValue.utf8String("")),
            ReceiptAttribute(type: 1718, value: ReceiptValue.utf8String("")),
            ReceiptAttribute(type: 1722, value: ReceiptValue.integer(0)),
        ]
        let inApps = (0..<purchases).map { i -> InAppPurchase in
            let start = created - Double(purchases - i) * 30 * 86_400
            let subscription = i % 2 == 0
            return InAppPurchase(
                quantity: 1, productId: subscription ? "\(bundleId).monthly" : "\(bundleId).gems.\(i)",
                transactionId: String(2_000_000_847_061_981 + i), purchaseDate: start,
                originalTransactionId: String(2_000_000_847_061_981 + (subscription ? 0 : i)), originalPurchaseDate: start,
                productTypeCode: subscription ? 3 : 1, expiresDate: subscription ? start + 30 * 86_400 : nil,
                webOrderLineItemId: subscription ? 2_000_000_021_470_597 + Int64(i) : nil,
                isTrialPeriod: subscription ? false : nil, isInIntroOfferPeriod: subscription ? false : nil,
                otherAttributes: undocumented)
        }
        let opaque: [UInt8] = Array(0..<16)
        return AppReceipt(
            receiptType: "ProductionSandbox", appItemId: 0, bundleId: bundleId, applicationVersion: "1",
            opaqueValue: opaque,
            sha1Hash: AppReceipt.deviceHash(
                identifier: Array(repeating: 7, count: 16), opaqueValue: opaque,
                bundleIdAttributeValue: ReceiptValue.utf8String(bundleId)),
            receiptCreationDate: created, downloadId: 0, versionExternalIdentifier: 0, inAppPurchases: inApps,
            originalPurchaseDate: Date(timeIntervalSince1970: 1_375_340_400), originalApplicationVersion: "1.0",
            otherAttributes: [
                ReceiptAttribute(type: 8, value: ReceiptValue.date(nil)),
                ReceiptAttribute(type: 10, value: [ASN1Tag.ia5String, 2, 0x34, 0x2B]),
                ReceiptAttribute(type: 20, value: ReceiptValue.utf8String("")),
            ])
    }
}

enum BenchmarkError: Error, CustomStringConvertible {
    case verificationFailed(String)

    var description: String {
        switch self {
        case .verificationFailed(let name): "\(name): verification failed during the benchmark"
        }
    }
}
