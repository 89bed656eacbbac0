import Crypto
import Foundation
import TillCore
import TillFormats
import _CryptoExtras

/// iOS 6-style transaction receipts: the outer OpenStep plist, the purchase-info plist inside its base64, and the
/// signature blob with its certificate.
enum TransactionReceiptTarget {
    static let target = FuzzTarget(
        name: "transaction-receipt",
        summary:
            "an iOS 6-style transaction receipt (the outer plist's bytes) through OpenStepPlist, "
            + "TransactionReceipt.decode and TransactionReceiptVerifier under the fuzz roots and Apple's",
        maximumLength: 32 * 1024,
        seeds: seeds,
        check: check,
        mutate: mutate
    )

    static let openVerifier = TransactionReceiptVerifier(.init(anchors: FuzzPKI.receiptAnchors))
    static let appVerifier = TransactionReceiptVerifier(
        .init(anchors: FuzzPKI.receiptAnchors, bundleId: "com.example.till", environment: .sandbox)
    )
    static let appleVerifier = TransactionReceiptVerifier(.init())

    static func check(_ bytes: [UInt8]) async throws {
        // The plist: parse → write → parse gives the same value.
        if let plist = try? OpenStepPlist(parsing: bytes) {
            let written = plist.serializedBytes()
            let again = try? OpenStepPlist(parsing: written, limits: .init(maxBytes: written.count + 1))
            try require(again == plist, "round trip", "the plist written back reads as \(String(describing: again))")
        }
        let receipt: TransactionReceipt
        do {
            receipt = try TransactionReceipt.decode(bytes: bytes)
        } catch {
            return
        }
        // The receipt: decode → encode → decode gives the same receipt.
        let encoded = receipt.encodedBytes()
        let limits = OpenStepPlist.Limits(maxBytes: max(encoded.count, OpenStepPlist.Limits.default.maxBytes))
        let again = try? TransactionReceipt.decode(bytes: encoded, limits: limits)
        try require(again == receipt, "round trip", "re-encoded, it decodes as \(String(describing: again))")

        let open = await openVerifier.verify(receipt)
        let app = await appVerifier.verify(receipt)
        let apple = await appleVerifier.verify(receipt)
        if case .valid = app, case .invalid = open {
            throw PropertyViolation("monotonic", "valid for the app, but \(open.reasonText) for the open verifier")
        }
        // The outer plist's layout (whitespace, quoting, escapes) is not signed and means nothing: the receipt
        // written in Apple's layout gets the same verdicts.
        if encoded.count <= OpenStepPlist.Limits.default.maxBytes,
            let same = try? TransactionReceipt.decode(bytes: encoded)
        {
            for (name, verifier, first) in [("open", openVerifier, open), ("apple", appleVerifier, apple)] {
                let second = await verifier.verify(same)
                try require(
                    first.reasonText == second.reasonText,
                    "ignored bytes",
                    "\(name): \(first.reasonText) as written, \(second.reasonText) in Apple's layout"
                )
            }
        }
    }

    // MARK: Mutations

    static let purchaseInfoKeys = TransactionReceipt.PurchaseInfo.Key.all + ["bid", "unknown-key", ""]
    static let interestingValues = [
        "", "0", "-1", "1", "2", "true", "false", "com.example.till", "Sandbox", "Production", "sandbox",
        "1514048624000", "-1514048624000", "99999999999999999999", "9223372036854775807", "1e3", "0x10",
        "2017-12-23 17:03:44 Etc/GMT", "2017-12-23 09:03:44 America/Los_Angeles", "\u{0}", "é", "\\U00e9",
        String(repeating: "9", count: 400),
    ]

    static func mutate(_ input: [UInt8], _ random: inout FuzzRandom, _ bytes: ByteMutator) -> [UInt8] {
        guard let plist = try? OpenStepPlist(parsing: input), var entries = plist.dictionaryEntries,
            random.chance(7, in: 8)
        else {
            var copy = input
            bytes(&copy, maximumLength: input.count + 64)
            return copy
        }
        func index(of key: String) -> Int? { entries.firstIndex { $0.key == key } }
        func set(_ key: String, _ value: String) {
            if let at = index(of: key) {
                entries[at].value = .string(value)
            } else {
                entries.append(.init(key: key, value: .string(value)))
            }
        }
        switch random.int(0...9) {
        case 0...4:
            // The purchase-info inside: its plist mutated, signed again most of the time.
            let info =
                entries.first { $0.key == "purchase-info" }?.value.stringValue
                .flatMap { Data(base64Encoded: $0) }.map { [UInt8]($0) } ?? []
            let mutated = mutatePurchaseInfo(info, &random, bytes)
            set("purchase-info", Data(mutated).base64EncodedString())
            if random.chance(3, in: 4) { set("signature", Data(sign(mutated)).base64EncodedString()) }
        case 5, 6:
            // The signature blob: version, lengths, signature, certificate.
            var blob =
                entries.first { $0.key == "signature" }?.value.stringValue
                .flatMap { Data(base64Encoded: $0) }.map { [UInt8]($0) } ?? sign([])
            switch random.int(0...3) {
            case 0 where !blob.isEmpty: blob[0] = random.element(of: [0, 1, 2, 3, 4, 0xFF])
            case 1 where blob.count > 261:
                // The certificate, through the DER mutator, with its length field kept true or not.
                let certificate = DERMutator.mutate(Array(blob[261...]), &random, bytes)
                let length = random.chance(3, in: 4) ? certificate.count : random.int(0...70_000)
                blob =
                    Array(blob[..<257])
                    + [
                        UInt8(length >> 24 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF),
                        UInt8(length & 0xFF),
                    ]
                    + certificate
            default: bytes(&blob, maximumLength: blob.count + 64)
            }
            set("signature", Data(blob).base64EncodedString())
        case 7:
            if random.chance(1, in: 3), let at = index(of: "environment") {
                entries.remove(at: at)
            } else {
                set("environment", random.element(of: interestingValues))
            }
        case 8:
            switch random.int(0...2) {
            case 0:
                set(
                    random.element(of: ["pod", "signing-status", "x", "purchase-info"]),
                    random.element(of: interestingValues)
                )
            case 1 where !entries.isEmpty: entries.remove(at: random.int(0...entries.count - 1))
            default:
                entries.append(
                    .init(key: "nested", value: .dictionary([.init(key: "a", value: .array([.string("b")]))]))
                )
            }
        default:
            var text = OpenStepPlist.dictionary(entries).serializedBytes()
            bytes(&text, maximumLength: text.count + 64)
            return text
        }
        return OpenStepPlist.dictionary(entries).serializedBytes()
    }

    /// An entry of the inner plist changed, added, removed or repeated; or its text's bytes.
    static func mutatePurchaseInfo(_ info: [UInt8], _ random: inout FuzzRandom, _ bytes: ByteMutator) -> [UInt8] {
        guard var entries = (try? OpenStepPlist(parsing: info))?.dictionaryEntries, random.chance(5, in: 6) else {
            var copy = info
            bytes(&copy, maximumLength: info.count + 64)
            return copy
        }
        switch random.int(0...5) {
        case 0...1 where !entries.isEmpty:
            let at = random.int(0...entries.count - 1)
            entries[at].value = .string(random.element(of: interestingValues))
        case 2 where !entries.isEmpty:
            let at = random.int(0...entries.count - 1)
            var value = Array((entries[at].value.stringValue ?? "").utf8)
            bytes(&value, maximumLength: value.count + 16)
            entries[at].value = .string(String(decoding: value, as: UTF8.self))
        case 3 where !entries.isEmpty:
            entries.remove(at: random.int(0...entries.count - 1))
        case 4:
            let key = random.element(of: purchaseInfoKeys)
            entries.removeAll { $0.key == key }
            entries.append(.init(key: key, value: .string(random.element(of: interestingValues))))
        default:
            // A repeated key, or a value that is not a string.
            if random.chance(1, in: 2), let first = entries.first {
                var text = OpenStepPlist.dictionary(entries).serialized()
                text.removeLast()  // the closing brace
                text += "\t\"\(first.key)\" = \"again\";\n}"
                return Array(text.utf8)
            }
            entries.append(.init(key: random.element(of: purchaseInfoKeys), value: .array([.string("1")])))
        }
        return OpenStepPlist.dictionary(entries).serializedBytes()
    }

    /// A version 3 signature blob over `purchaseInfo`, by the fuzz leaf.
    static func sign(_ purchaseInfo: [UInt8]) -> [UInt8] {
        let message = TransactionReceiptSignature.signedMessage(version: 3, purchaseInfo: purchaseInfo)
        guard
            let signature = try? FuzzPKI.receipt.leafKey.rsa!.signature(
                for: Insecure.SHA1.hash(data: message),
                padding: .insecurePKCS1v1_5
            ),
            let blob = try? TransactionReceiptSignature(
                version: 3,
                signatureBytes: Array(signature.rawRepresentation),
                leafCertificateDER: FuzzPKI.receiptLeafDER
            )
        else { return [3] }
        return blob.bytes
    }

    // MARK: Seeds

    static func seeds() async throws -> [FuzzSeed] {
        var seeds: [FuzzSeed] = []
        let purchase: [String: String] = [
            "original-purchase-date-pst": "2017-12-23 09:03:44 America/Los_Angeles",
            "purchase-date-ms": "1514048624000", "unique-identifier": "0000b0090000000000000000000000000000000f",
            "original-transaction-id": "160000408504141", "bvrs": "1.0", "transaction-id": "160000408504141",
            "quantity": "1", "original-purchase-date-ms": "1514048624000",
            "unique-vendor-identifier": "7E3FB20B-4CDB-47CC-936D-99D65F608138", "item-id": "1234567890",
            "version-external-identifier": "0", "product-id": "gems.100",
            "purchase-date": "2017-12-23 17:03:44 Etc/GMT", "original-purchase-date": "2017-12-23 17:03:44 Etc/GMT",
            "bid": "com.example.till", "purchase-date-pst": "2017-12-23 09:03:44 America/Los_Angeles",
        ]
        var subscription = purchase
        subscription["product-id"] = "premium.monthly"
        subscription["expires-date"] = "1516727024000"
        subscription["expires-date-formatted"] = "2018-01-23 17:03:44 Etc/GMT"
        subscription["web-order-line-item-id"] = "160000070862045"
        subscription["is-trial-period"] = "false"
        for (name, fields, environment) in [
            ("consumable-sandbox", purchase, AppStoreEnvironment.sandbox),
            ("consumable-production", purchase, .production),
            ("subscription-sandbox", subscription, .sandbox),
        ] {
            let receipt = try TransactionReceipt.sign(
                purchaseInfo: TransactionReceipt.PurchaseInfo(fields: fields),
                environment: environment,
                pod: "100",
                privateKey: FuzzPKI.receipt.leafKey.rsa!,
                certificateDER: FuzzPKI.receiptLeafDER
            )
            seeds.append(FuzzSeed("sample-\(name)", receipt.encodedBytes()))
        }
        for (path, bytes) in AppleVectors.files(under: "third-party")
            + AppleVectors.files(under: "apple-library/mock_signed_data")
        {
            let decoded = AppleVectors.decoded(bytes)
            if decoded.first == UInt8(ascii: "{") { seeds.append(FuzzSeed(AppleVectors.seedName(path), decoded)) }
        }
        return seeds
    }
}
