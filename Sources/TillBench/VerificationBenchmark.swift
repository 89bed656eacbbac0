import Crypto
import Foundation
import TillCore
import TillFormats

/// Measures full verification on the calling thread: what `till bench` runs.
public enum VerificationBenchmark {
    /// Timings of one benchmark run.
    ///
    /// The machine may be shared (a virtual machine with noisy neighbours), so the run is cut into rounds
    /// of one second: `ops_per_sec` is the best round, the least disturbed estimate of what one core
    /// sustains, and `mean_ops_per_sec` is the whole run. Percentiles are over every operation.
    public struct Result: Sendable, CustomStringConvertible {
        public var name: String
        public var operations: Int
        public var seconds: Double
        public var bestRoundOperationsPerSecond: Double
        public var p50Microseconds: Double
        public var p99Microseconds: Double

        public var meanOperationsPerSecond: Double { Double(operations) / seconds }

        /// `NAME ops_per_sec=… p50_us=… p99_us=… mean_ops_per_sec=… operations=…`
        public var description: String {
            "\(name) ops_per_sec=\(Int(bestRoundOperationsPerSecond.rounded())) p50_us=\(format(p50Microseconds))"
                + " p99_us=\(format(p99Microseconds)) mean_ops_per_sec=\(Int(meanOperationsPerSecond.rounded()))"
                + " operations=\(operations)"
        }

        private func format(_ value: Double) -> String { String(format: "%.1f", value) }
    }

    /// Runs `operation` repeatedly on the calling task for `duration` (in one-second rounds) after a
    /// warm-up, timing each call.
    public static func measure(
        _ name: String,
        duration: Duration,
        operation: () async throws -> Bool
    ) async throws -> Result {
        let clock = ContinuousClock()
        let warmUpEnd = clock.now + duration / 10
        while clock.now < warmUpEnd {
            guard try await operation() else { throw BenchmarkError.verificationFailed(name) }
        }
        var samples = LatencyHistogram()
        var best = 0.0
        let start = clock.now
        let end = start + duration
        var now = start
        while now < end {
            let roundStart = now
            let roundEnd = min(end, roundStart + .seconds(1))
            var count = 0
            while now < roundEnd {
                let before = now
                guard try await operation() else { throw BenchmarkError.verificationFailed(name) }
                now = clock.now
                samples.record(now - before)
                count += 1
            }
            best = max(best, Double(count) / seconds(now - roundStart))
        }
        return Result(
            name: name,
            operations: samples.count,
            seconds: seconds(now - start),
            bestRoundOperationsPerSecond: best,
            p50Microseconds: samples.milliseconds(0.50) * 1000,
            p99Microseconds: samples.milliseconds(0.99) * 1000
        )
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Full verification of an app receipt with `purchases` in-app purchases: CMS signature (RSA-2048,
    /// SHA-256), certificate chain (cached by certificate bytes) and decoding of every field.
    public static func receipts(purchases: Int = 10, duration: Duration = .seconds(5)) async throws -> Result {
        let authority = try TestPKI.makeAuthority(kind: .rsa2048, name: "Bench Receipts")
        let receipt = Samples.receipt(purchases: purchases)
        let der = try ReceiptSigner(key: authority.leafKey.rsa!, certificates: authority.chain).sign(receipt)
        let verifier = ReceiptVerifier(
            .init(anchors: authority.anchors, bundleId: "com.example.till", environment: .sandbox)
        )
        return try await measure("receipt", duration: duration) {
            guard case .valid(let verified) = await verifier.verify(der: der) else { return false }
            return verified.receipt.inAppPurchases.count == purchases
        }
    }

    /// Full verification of a StoreKit 2 signed transaction: header and chain (cached by certificate bytes),
    /// ES256 signature, and decoding of the payload.
    public static func jws(duration: Duration = .seconds(5)) async throws -> Result {
        let authority = try TestPKI.makeAuthority(kind: .p256, name: "Bench JWS")
        let jws = try JWSSigner(key: authority.leafKey.p256!, chain: authority.chain).sign(Samples.transaction())
        let verifier = SignedDataVerifier(
            .init(anchors: authority.anchors, bundleId: "com.example.till", environment: .sandbox)
        )
        let bytes = Array(jws.utf8)
        return try await measure("jws", duration: duration) {
            guard case .valid(let verified) = await verifier.verify(bytes: bytes, as: JWSTransactionDecodedPayload.self)
            else { return false }
            return verified.payload.transactionId == "2000000847061981"
        }
    }

    /// The ceiling: one ES256 signature check of a SHA-256 digest, nothing else (swift-crypto, BoringSSL).
    public static func es256(duration: Duration = .seconds(5)) async throws -> Result {
        let key = P256.Signing.PrivateKey()
        let digest = SHA256.hash(data: Array("till".utf8))
        let signature = try key.signature(for: digest)
        let publicKey = key.publicKey
        return try await measure("es256", duration: duration) { publicKey.isValidSignature(signature, for: digest) }
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
