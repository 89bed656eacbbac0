import Foundation
import HTTPTypes
import Logging
import SwiftASN1
import TillAppStore
import TillCatalogue
import TillContract
import TillCore
import TillDevelopment
import TillFormats
import TillHTTPKit
import TillLedger
import TillServer
import X509

/// What the worst input of each limit on hostile input costs (docs/fuzzing.md, "Resource bounds"): `till bench
/// limits`. Each case runs in a child process of its own, so that its peak resident memory is its own; the table
/// shows the median and the slowest run, and the peak memory above a child that only starts.
public enum LimitsBenchmark {
    /// One worst input: which limit, what the input is, and the operation that reads it.
    struct Case: Sendable {
        var name: String
        var limit: String
        var input: String
        /// Made once per child; returns the operation to time (true when it ended as expected).
        var prepare: @Sendable () async throws -> @Sendable () async throws -> Bool
    }

    /// One row of the table.
    public struct Measurement: Codable, Sendable {
        public var name: String
        public var limit: String
        public var input: String
        public var operations: Int
        public var medianMilliseconds: Double
        public var maximumMilliseconds: Double
        public var peakResidentKiB: Int
    }

    public static var caseNames: [String] { cases.map(\.name) }

    /// Runs every case in a child (`executable bench limits --case NAME`) and prints the table.
    public static func all(executable: String, seconds: Int) async throws -> String {
        let baseline = try child(executable, "baseline", seconds: 1)
        var rows: [Measurement] = []
        for name in caseNames where name != "baseline" {
            rows.append(try child(executable, name, seconds: seconds))
        }
        var table = "| limit | worst input | runs | median | slowest | peak memory above a bare process |\n"
        table += "|---|---|---|---|---|---|\n"
        for row in rows {
            let memory = max(0, row.peakResidentKiB - baseline.peakResidentKiB)
            table +=
                "| \(row.limit) | \(row.input) | \(row.operations) | \(milliseconds(row.medianMilliseconds)) | "
                + "\(milliseconds(row.maximumMilliseconds)) | \(memory >= 1024 ? "\(memory / 1024) MiB" : "\(memory) KiB") |\n"
        }
        table += "\n(baseline process: \(baseline.peakResidentKiB / 1024) MiB peak resident)\n"
        return table
    }

    private static func milliseconds(_ value: Double) -> String {
        value < 1 ? String(format: "%.3f ms", value) : String(format: "%.1f ms", value)
    }

    private static func child(_ executable: String, _ name: String, seconds: Int) throws -> Measurement {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["bench", "limits", "--case", name, "--seconds", String(seconds)]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let line = data.split(separator: UInt8(ascii: "\n")).last else {
            throw LimitsBenchmarkError.childFailed(name, Int(process.terminationStatus))
        }
        return try JSONDecoder().decode(Measurement.self, from: Data(line))
    }

    /// Runs one case in this process for about `seconds` (at least three runs) and measures it.
    public static func run(case name: String, seconds: Int) async throws -> Measurement {
        guard let found = cases.first(where: { $0.name == name }) else { throw LimitsBenchmarkError.noCase(name) }
        let operation = try await found.prepare()
        let clock = ContinuousClock()
        var samples: [Double] = []
        let end = clock.now + .seconds(seconds)
        while samples.count < 3 || clock.now < end {
            let start = clock.now
            guard try await operation() else { throw LimitsBenchmarkError.unexpected(name) }
            let elapsed = clock.now - start
            samples.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1e3)
            if samples.count >= 10_000 { break }
        }
        samples.sort()
        return Measurement(
            name: name,
            limit: found.limit,
            input: found.input,
            operations: samples.count,
            medianMilliseconds: samples[samples.count / 2],
            maximumMilliseconds: samples.last ?? 0,
            peakResidentKiB: peakResidentKiB()
        )
    }

    /// VmHWM: the most memory this process has held resident (0 where /proc is not there).
    static func peakResidentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
        else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }

    // MARK: The cases

    static let cases: [Case] = [
        Case(name: "baseline", limit: "none", input: "nothing") { { true } },
        Case(name: "receipt-size", limit: "receipt size 1 MiB", input: "a valid 1 MiB receipt, 4,096 purchases") {
            let authority = try TestPKI.makeAuthority(kind: .rsa2048, name: "Limits")
            var receipt = minimal(purchases: 4_096)
            let signer = try ReceiptSigner(key: authority.leafKey.rsa!, certificates: authority.chain)
            let room = (1 << 20) - 2_048 - (try signer.sign(receipt).count)
            receipt.otherAttributes = [ReceiptAttribute(type: 9_999, value: [UInt8](repeating: 0x41, count: room))]
            let der = try signer.sign(receipt)
            let verifier = ReceiptVerifier(.init(anchors: authority.anchors))
            return { await verifier.verify(der: der).failure == nil }
        },
        Case(name: "receipt-purchases", limit: "4,096 purchases", input: "4,096 minimal purchases, verified") {
            let (der, verifier) = try signed(minimal(purchases: 4_096))
            return { await verifier.verify(der: der).failure == nil }
        },
        Case(name: "receipt-purchases-over", limit: "4,096 purchases", input: "4,097 minimal purchases, refused") {
            let (der, verifier) = try signed(minimal(purchases: 4_097))
            return { await verifier.verify(der: der).failure?.reason == .tooLarge }
        },
        Case(name: "receipt-certificates", limit: "8 certificates", input: "8 embedded, each decoded (no cache)") {
            let authority = try TestPKI.makeAuthority(kind: .rsa2048, name: "Limits")
            let strangers = try (0..<6).map { _ in try TestPKI.makeAuthority(kind: .rsa2048, name: "Other").root }
            let der = try ReceiptSigner(
                key: authority.leafKey.rsa!,
                certificates: [authority.leaf, authority.intermediate] + strangers
            ).sign(minimal(purchases: 1))
            return {
                let verifier = ReceiptVerifier(.init(anchors: authority.anchors))
                return await verifier.verify(der: der).failure?.reason == .invalidChain
            }
        },
        Case(name: "receipt-depth", limit: "ASN.1 depth 32", input: "10,000 nested indefinite lengths") {
            var bytes: [UInt8] = [0x04, 0x00]
            for _ in 0..<10_000 { bytes = [0x30, 0x80] + bytes + [0, 0] }
            let verifier = ReceiptVerifier(.init())
            return { [bytes] in await verifier.verify(der: bytes).failure?.reason == .invalidFormat }
        },
        Case(name: "jws-size", limit: "JWS 256 KiB", input: "a valid JWS of 256 KiB, 95,000 numbers in its payload") {
            let authority = try TestPKI.makeAuthority(kind: .p256, name: "Limits")
            var payload = Array(#"{"transactionId":"1","bundleId":"b","signedDate":1700000000000,"x":["#.utf8)
            while payload.count < 190_000 { payload += Array("0,".utf8) }
            payload += Array("0]}".utf8)
            let jws = Array(
                try JWSSigner(key: authority.leafKey.p256!, chain: authority.chain).sign(payloadJSON: payload).utf8
            )
            let verifier = SignedDataVerifier(.init(anchors: authority.anchors))
            return { await verifier.verify(bytes: jws, as: JWSTransactionDecodedPayload.self).failure == nil }
        },
        Case(name: "jws-keys", limit: "JWS 256 KiB", input: "a payload object of 12,000 distinct keys") {
            let authority = try TestPKI.makeAuthority(kind: .p256, name: "Limits")
            let members = (0..<12_000).map { #""k\#($0)":0"# }.joined(separator: ",")
            let payload = Array(#"{"transactionId":"1","signedDate":1700000000000,\#(members)}"#.utf8)
            let jws = Array(
                try JWSSigner(key: authority.leafKey.p256!, chain: authority.chain).sign(payloadJSON: payload).utf8
            )
            let verifier = SignedDataVerifier(.init(anchors: authority.anchors))
            return { await verifier.verify(bytes: jws, as: JWSTransactionDecodedPayload.self).failure == nil }
        },
        Case(name: "jws-depth", limit: "JSON depth 64", input: "a payload nested 90,000 deep, refused") {
            let authority = try TestPKI.makeAuthority(kind: .p256, name: "Limits")
            // 90,000 (not more): the JWS stays under its 256 KiB, so that the depth is what refuses it.
            let payload = Array((String(repeating: "[", count: 90_000) + String(repeating: "]", count: 90_000)).utf8)
            let jws = Array(
                try JWSSigner(key: authority.leafKey.p256!, chain: authority.chain).sign(payloadJSON: payload).utf8
            )
            let verifier = SignedDataVerifier(.init(anchors: authority.anchors))
            return {
                await verifier.verify(bytes: jws, as: JWSTransactionDecodedPayload.self).failure?.reason
                    == .malformedPayload
            }
        },
        Case(
            name: "transaction-receipt",
            limit: "plist 64 KiB",
            input: "a valid 64 KiB receipt, 1,500 purchase-info keys"
        ) {
            let authority = try TestPKI.makeAuthority(kind: .rsa2048, name: "Limits")
            var fields = ["transaction-id": "1", "product-id": "p", "bid": "b", "purchase-date-ms": "1700000000000"]
            for index in 0..<1_500 { fields["key-\(index)"] = "value-\(index)" }
            let receipt = try TransactionReceipt.sign(
                purchaseInfo: .init(fields: fields),
                environment: .sandbox,
                pod: "100",
                privateKey: authority.leafKey.rsa!,
                certificateDER: try authority.leaf.serializeAsPEM().derBytes
            )
            let text = receipt.base64EncodedString()
            let verifier = TransactionReceiptVerifier(
                .init(anchors: TrustAnchors(roots: [authority.root], intermediates: [authority.intermediate]))
            )
            return { await verifier.verify(base64: text).failure == nil }
        },
        Case(
            name: "server-purchases",
            limit: "4,096 purchases",
            input: "POST /v1/receipts: 4,096 new purchases into the ledger (SQLite in memory)"
        ) {
            let world = try await ServerWorld.open()
            let authority = world.receiptAuthority
            let counter = Counter()
            return {
                let round = counter.next()
                var receipt = minimal(purchases: 4_096, prefix: "r\(round)-")
                receipt.bundleId = "com.example.till"
                let der = try ReceiptSigner(key: authority.leafKey.rsa!, certificates: authority.chain).sign(receipt)
                let body = #"{"customerId":"c\#(round)","receipt":"\#(Base64.encode(der))"}"#
                let reply = try await world.call(.post, "/v1/receipts", body: Array(body.utf8))
                return reply.status == 202 || reply.status == 200
            }
        },
        Case(
            name: "body-json",
            limit: "JSON body 64 KiB",
            input: "POST /v1/customers/alice/debits: 64 KiB, 21,000 numbers"
        ) {
            let world = try await ServerWorld.open()
            let body = debitFilled(with: "0")
            return { try await world.call(.post, "/v1/customers/alice/debits", body: body).status < 500 }
        },
        Case(
            name: "body-json-arrays",
            limit: "JSON body 64 KiB",
            input: "POST /v1/customers/alice/debits: 64 KiB, 3,000 arrays nested 10 deep (found by app-api)"
        ) {
            let world = try await ServerWorld.open()
            let body = debitFilled(with: String(repeating: "[", count: 10) + String(repeating: "]", count: 10))
            return { try await world.call(.post, "/v1/customers/alice/debits", body: body).status < 500 }
        },
        Case(
            name: "body-json-depth",
            limit: "JSON body 64 KiB",
            input: "POST /v1/customers/alice/debits: 32,000 deep, refused"
        ) {
            let world = try await ServerWorld.open()
            let body = Array((String(repeating: "[", count: 32_000) + String(repeating: "]", count: 32_000)).utf8)
            return { try await world.call(.post, "/v1/customers/alice/debits", body: body).status == 400 }
        },
        Case(name: "body-receipt", limit: "receipt body 2 MiB", input: "POST /v1/receipts: 2 MiB of base64, refused") {
            let world = try await ServerWorld.open()
            let prefix = Array(#"{"customerId":"alice","receipt":""#.utf8)
            let body =
                prefix + [UInt8](repeating: UInt8(ascii: "A"), count: BodyLimit.receipt - prefix.count - 2)
                + Array(#""}"#.utf8)
            return {
                let status = try await world.call(.post, "/v1/receipts", body: body).status
                return status != 413 && status < 500
            }
        },
        Case(
            name: "body-receipt-nulls",
            limit: "receipt body 2 MiB",
            input: "POST /v1/receipts: 2 MiB, 419,000 nulls in a member no field has and one in idempotencyKey, refused"
        ) {
            let world = try await ServerWorld.open()
            let prefix = Array(#"{"customerId":"alice","signedTransaction":"a.b.c","x":["#.utf8)
            let suffix = Array(#"null],"idempotencyKey":null}"#.utf8)
            let count = (BodyLimit.receipt - prefix.count - suffix.count) / 5
            let body = prefix + Array(String(repeating: "null,", count: count).utf8) + suffix
            return {
                let answer = try await world.call(.post, "/v1/receipts", body: body)
                return answer.status == 400 && String(decoding: answer.body, as: UTF8.self).contains("idempotencyKey is null")
            }
        },
        Case(name: "body-over", limit: "receipt body 2 MiB", input: "POST /v1/receipts: 2 MiB + 1 byte, refused 413") {
            let world = try await ServerWorld.open()
            let body = [UInt8](repeating: UInt8(ascii: " "), count: BodyLimit.receipt + 1)
            return { try await world.call(.post, "/v1/receipts", body: body).status == 413 }
        },
        Case(
            name: "body-notification",
            limit: "notification body 512 KiB",
            input: "POST /v1/apple/notifications: a 500 KiB signedPayload, refused"
        ) {
            let world = try await ServerWorld.open()
            let prefix = Array(#"{"signedPayload":""#.utf8)
            let body = prefix + [UInt8](repeating: UInt8(ascii: "A"), count: 500 * 1024) + Array(#""}"#.utf8)
            return { try await world.call(.post, "/v1/apple/notifications", body: body).status == 401 }
        },
    ]

    /// A debit's JSON body filled to just under the JSON body limit with an array of `item`, repeated.
    static func debitFilled(with item: String) -> [UInt8] {
        var body = Array(#"{"credit":"gems","amount":1,"x":["#.utf8)
        let next = Array((item + ",").utf8)
        while body.count + next.count + item.utf8.count + 2 <= BodyLimit.json { body += next }
        return body + Array((item + "]}").utf8)
    }

    /// A receipt whose purchases hold only a product and a transaction id: the most purchases a size allows.
    static func minimal(purchases count: Int, prefix: String = "") -> AppReceipt {
        var receipt = Samples.receipt(purchases: 0)
        receipt.inAppPurchases = (0..<count).map { InAppPurchase(productId: "p", transactionId: prefix + String($0)) }
        return receipt
    }

    static func signed(_ receipt: AppReceipt) throws -> ([UInt8], ReceiptVerifier) {
        let authority = try TestPKI.makeAuthority(kind: .rsa2048, name: "Limits")
        let der = try ReceiptSigner(key: authority.leafKey.rsa!, certificates: authority.chain).sign(receipt)
        return (der, ReceiptVerifier(.init(anchors: authority.anchors)))
    }

    /// A server in memory trusting a receipt authority of its own for the sandbox, with one app.
    struct ServerWorld: Sendable {
        let router: InProcessRouter<ServerRequestContext>
        let appKey: String
        let receiptAuthority: SigningAuthority

        static func open() async throws -> ServerWorld {
            let authority = try TestPKI.makeAuthority(kind: .rsa2048, name: "Limits")
            var logger = Logger(label: "till.bench.limits")
            logger.logLevel = .critical
            let server = try await PurchaseServer.open(
                ServerConfiguration(
                    operatorToken: "limits-operator-token",
                    apple: .simulator("http://127.0.0.1:9"),
                    sandboxReceiptRoots: [authority.root]
                ),
                logger: logger
            )
            let app = try await server.catalogue.createApp(ServerAppInput(bundleId: "com.example.till"))
            return ServerWorld(
                router: InProcessRouter(buildServerRouter(server), logger: logger),
                appKey: app.appKey,
                receiptAuthority: authority
            )
        }

        func call(_ method: HTTPRequest.Method, _ path: String, body: [UInt8]) async throws -> RouterReply {
            try await router.call(method, path, headers: [.authorization: "Bearer \(appKey)"], body: body)
        }
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0

        func next() -> Int {
            lock.lock()
            defer { lock.unlock() }
            value += 1
            return value
        }
    }
}

enum LimitsBenchmarkError: Error, CustomStringConvertible {
    case noCase(String)
    case unexpected(String)
    case childFailed(String, Int)

    var description: String {
        switch self {
        case .noCase(let name): "no limits case \(name); they are \(LimitsBenchmark.caseNames.joined(separator: ", "))"
        case .unexpected(let name): "\(name): the input did not end as the case expects"
        case .childFailed(let name, let status): "\(name): the child process exited \(status)"
        }
    }
}
