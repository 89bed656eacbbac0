import Foundation
import TillCore
import TillFormats

/// App receipts: the PKCS#7 container (DER and Xcode's BER), the ASN.1 inside it, the payload's fields and the
/// certificate chain.
enum ReceiptTargets {
    static let appReceipt = FuzzTarget(
        name: "app-receipt",
        summary:
            "an app receipt's bytes (PKCS#7, DER or BER) through ReceiptVerifier under the fuzz roots (open and "
            + "constrained to an app) and Apple's, and through decodeWithoutVerifying",
        maximumLength: 64 * 1024,
        seeds: containerSeeds,
        check: checkContainer,
        mutate: mutateContainer
    )

    static let receiptPayload = FuzzTarget(
        name: "receipt-payload",
        summary:
            "a receipt payload (the SET OF attributes inside the CMS content) decoded into AppReceipt, described as "
            + "verifyReceipt's JSON and mapped to purchases",
        maximumLength: 32 * 1024,
        seeds: payloadSeeds,
        check: checkPayload,
        mutate: { input, random, bytes in DERMutator.mutate(input, &random, bytes) }
    )

    // MARK: Verifiers

    static let openVerifier = ReceiptVerifier(.init(anchors: TrustAnchors(roots: [FuzzPKI.receipt.root])))
    static let appVerifier = ReceiptVerifier(
        .init(anchors: TrustAnchors(roots: [FuzzPKI.receipt.root]), bundleId: "com.example.till", environment: .sandbox)
    )
    static let appleVerifier = ReceiptVerifier(.init())

    // MARK: The container

    static func checkContainer(_ bytes: [UInt8]) async throws {
        let decoded = try? ReceiptVerifier.decodeWithoutVerifying(der: bytes)
        let open = await openVerifier.verify(der: bytes)
        let app = await appVerifier.verify(der: bytes)
        let apple = await appleVerifier.verify(der: bytes)

        // What verifies decodes, to the same receipt, without verifying.
        for (name, outcome) in [("open", open), ("app", app), ("apple", apple)] {
            if case .valid(let verified) = outcome {
                try require(
                    decoded == verified.receipt,
                    "consistency",
                    "valid under the \(name) verifier, but decodeWithoutVerifying gives \(String(describing: decoded))"
                )
            }
        }
        // A verifier constrained to an app accepts nothing the open one refuses.
        if case .valid(let constrained) = app {
            guard case .valid(let unconstrained) = open, unconstrained.receipt == constrained.receipt else {
                throw PropertyViolation("monotonic", "valid for the app, but \(open.reasonText) for the open verifier")
            }
        }
        // Xcode's layout of the same receipt (indefinite lengths, the content in chunks) gets the same verdicts.
        if let rewrapped = xcodeLayout(bytes) {
            for (name, verifier, first) in [("open", openVerifier, open), ("apple", appleVerifier, apple)] {
                let second = await verifier.verify(der: rewrapped)
                try require(
                    first.reasonText == second.reasonText,
                    "ignored bytes",
                    "\(name): \(first.reasonText) in the App Store's layout, \(second.reasonText) in Xcode's"
                )
            }
        }
        if let decoded { try checkRoundTrip(decoded) }
    }

    /// Mostly the tree (contents, tags, lengths, shapes, DER in OCTET STRINGs); one time in five, the payload
    /// mutated and signed again by the fuzz leaf, so that the checks behind the signature see it.
    static func mutateContainer(_ input: [UInt8], _ random: inout FuzzRandom, _ bytes: ByteMutator) -> [UInt8] {
        guard random.chance(1, in: 5), let tree = DERNode.parse(input), let payload = payloadNode(of: tree) else {
            return DERMutator.mutate(input, &random, bytes)
        }
        let mutated = DERMutator.mutate(payload.content, &random, bytes)
        var signer = FuzzPKI.receiptSigner(layout: random.chance(1, in: 3) ? .xcode : .appStore)
        signer.digest = random.chance(1, in: 3) ? .sha1 : .sha256
        signer.signedAttributes = random.chance(1, in: 3)
        return (try? signer.sign(payload: mutated, signingTime: Date(timeIntervalSince1970: 1_700_000_000))) ?? input
    }

    static func containerSeeds() async throws -> [FuzzSeed] {
        var seeds: [FuzzSeed] = []
        let created = Date(timeIntervalSince1970: 1_700_000_000)
        for purchases in [0, 1, 4] {
            let receipt = Samples.receipt(purchases: purchases)
            for (layout, digest, attributes) in [
                (ReceiptSigner.Layout.appStore, ReceiptSigner.Digest.sha256, false), (.appStore, .sha1, true),
                (.xcode, .sha256, false),
            ] {
                var signer = FuzzPKI.receiptSigner(layout: layout)
                signer.digest = digest
                signer.signedAttributes = attributes
                seeds.append(
                    FuzzSeed(
                        "sample-\(purchases)-\(layout)-\(digest)\(attributes ? "-attributes" : "")",
                        try signer.sign(receipt, signingTime: created)
                    )
                )
            }
        }
        for (path, bytes) in AppleVectors.files(under: "third-party/AppReceiptValidator")
            + AppleVectors.files(under: "apple-library/xcode") + AppleVectors.files(under: "third-party/misc")
        {
            let decoded = AppleVectors.decoded(bytes)
            if decoded.first == 0x30 { seeds.append(FuzzSeed(AppleVectors.seedName(path), decoded)) }
        }
        return seeds
    }

    // MARK: The payload

    static func checkPayload(_ payload: [UInt8]) async throws {
        guard let receipt = try? ReceiptVerifier.decodeWithoutVerifying(der: wrap(payload)) else { return }
        try checkRoundTrip(receipt)
        // Every decodable receipt can be described as verifyReceipt does, and its purchases mapped.
        do {
            _ = try JSONEncoder().encode(ReceiptInfoJSON(receipt))
        } catch {
            throw PropertyViolation("describable", "ReceiptInfoJSON cannot be encoded: \(error)")
        }
        for purchase in receipt.inAppPurchases {
            _ = purchase.purchaseTransaction(
                bundleId: receipt.bundleId ?? "",
                environment: receipt.environment ?? .sandbox
            )
            _ = purchase.productType
        }
    }

    static func payloadSeeds() async throws -> [FuzzSeed] {
        var seeds = [0, 1, 4].map { FuzzSeed("sample-\($0)", Samples.receipt(purchases: $0).payloadDER()) }
        for seed in try await containerSeeds() where seed.name.hasPrefix("apple-") {
            if let tree = DERNode.parse(seed.bytes), let payload = payloadNode(of: tree) {
                seeds.append(FuzzSeed(seed.name, payload.isConstructed ? joined(payload) : payload.content))
            }
        }
        return seeds
    }

    /// Decode → encode → decode gives the receipt back (purchases and unknown attributes in DER's order: a
    /// `SET OF` has no other).
    static func checkRoundTrip(_ receipt: AppReceipt) throws {
        let encoded = receipt.payloadDER()
        guard let again = try? ReceiptVerifier.decodeWithoutVerifying(der: wrap(encoded)) else {
            throw PropertyViolation("round trip", "the re-encoded payload does not decode: \(hex(encoded.prefix(64)))")
        }
        let (first, second) = (canonical(receipt), canonical(again))
        guard first == second else {
            throw PropertyViolation("round trip", "decoded \(first)\nre-decoded \(second)")
        }
        try require(again.payloadDER() == encoded, "round trip", "a second encoding differs from the first")
    }

    /// The receipt with its purchases and unknown attributes in a fixed order.
    static func canonical(_ receipt: AppReceipt) -> AppReceipt {
        var receipt = receipt
        receipt.otherAttributes = sorted(receipt.otherAttributes)
        receipt.inAppPurchases = receipt.inAppPurchases.map { purchase in
            var purchase = purchase
            purchase.otherAttributes = sorted(purchase.otherAttributes)
            return purchase
        }.sorted { $0.payloadDER().lexicographicallyPrecedes($1.payloadDER()) }
        return receipt
    }

    private static func sorted(_ attributes: [ReceiptAttribute]) -> [ReceiptAttribute] {
        attributes.map { ReceiptAttribute(type: $0.type, version: $0.version, value: Array($0.value)) }.sorted {
            ($0.type, $0.version) != ($1.type, $1.version)
                ? ($0.type, $0.version) < ($1.type, $1.version) : $0.value.lexicographicallyPrecedes($1.value)
        }
    }

    // MARK: Layouts

    /// A container made once by the fuzz signer, whose content is replaced by the payload to decode.
    static let template: DERNode = {
        guard let bytes = try? FuzzPKI.receiptSigner().sign(payload: [0x31, 0x00]), let tree = DERNode.parse(bytes)
        else { fatalError("ReceiptTargets: no template container") }
        return tree
    }()

    /// Where the content OCTET STRING sits: ContentInfo → [0] → SignedData → encapContentInfo → [0] → content.
    static let contentPath = [1, 0, 2, 1, 0]

    /// `payload` in a PKCS#7 container (whose signature does not cover it: for decoding only).
    static func wrap(_ payload: [UInt8]) -> [UInt8] {
        var tree = template
        var content = tree[contentPath]
        content.touch()
        content.content = payload
        tree[contentPath] = content
        return tree.bytes
    }

    /// The content OCTET STRING of a container tree, when it has the expected shape.
    static func payloadNode(of tree: DERNode) -> DERNode? {
        var node = tree
        for (index, tag) in zip(contentPath, [UInt8(0xA0), 0x30, 0x30, 0xA0, 0x04]) {
            guard let children = node.children, index < children.count, children[index].tag & ~0x20 == tag & ~0x20
            else { return nil }
            node = children[index]
        }
        return node
    }

    /// The contents of a constructed OCTET STRING, its chunks joined.
    static func joined(_ node: DERNode) -> [UInt8] {
        guard let children = node.children else { return node.content }
        return children.flatMap(joined)
    }

    /// The same container in Xcode's layout: indefinite lengths from ContentInfo down to the content, and the content
    /// a constructed OCTET STRING of two chunks. Nil when the bytes are not a whole container of the usual shape.
    static func xcodeLayout(_ bytes: [UInt8]) -> [UInt8]? {
        guard var tree = DERNode.parse(bytes), let content = payloadNode(of: tree), !content.isConstructed,
            content.content.count >= 2, tree.tag == 0x30
        else { return nil }
        for depth in 0..<contentPath.count {
            let path = Array(contentPath.prefix(depth))
            var node = tree[path]
            node.touch()
            node.form = .indefinite
            tree[path] = node
        }
        let cut = content.content.count / 2
        tree[contentPath] = DERNode(
            tag: 0x24,
            children: [
                DERNode(tag: 0x04, content: Array(content.content[..<cut])),
                DERNode(tag: 0x04, content: Array(content.content[cut...])),
            ],
            form: .indefinite
        )
        return tree.bytes
    }
}

func hex(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

extension VerificationOutcome {
    /// `valid`, or the failure's reason: what two verdicts are compared by (details carry positions and sizes).
    var reasonText: String {
        switch self {
        case .valid: "valid"
        case .invalid(let failure): failure.reason.rawValue
        }
    }
}
