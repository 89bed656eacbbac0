import Foundation
import TillCore
import TillFormats

/// StoreKit 2 JWS: the compact form, the header and its `x5c` chain, and each payload type.
enum JWSTarget {
    static let target = FuzzTarget(
        name: "jws",
        summary:
            "a compact JWS through SignedDataVerifier as the payload type its keys name (transaction, renewal info, "
            + "app transaction, notification, realtime request), under the fuzz root and Apple's (open, constrained "
            + "to an app, and Xcode's locally signed rule)",
        maximumLength: 32 * 1024,
        seeds: seeds,
        check: check,
        mutate: { input, random, bytes in FuzzJWS.mutate(input, &random, bytes) }
    )

    static let anchors = TrustAnchors(roots: [FuzzPKI.jws.root, TrustAnchors.appleRootCAG3])
    static let openVerifier = SignedDataVerifier(.init(anchors: anchors))
    static let appVerifier = SignedDataVerifier(
        .init(anchors: anchors, bundleId: "com.example.till", appAppleId: 1_234_567_890, environment: .sandbox)
    )
    /// Xcode's rule: one certificate in `x5c`, which must be a configured root (here the fuzz leaf).
    static let xcodeVerifier = SignedDataVerifier(
        .init(anchors: TrustAnchors(roots: [FuzzPKI.jws.leaf]), environment: .xcode)
    )

    /// A verifier's verdict on a JWS read as one payload type.
    struct Verdict: Equatable {
        var reason: String
        var payload: AnyHashable?
        /// The payload encoded again with Apple's conventions (when valid).
        var reencoded: [UInt8]?
    }

    static func check(_ bytes: [UInt8]) async throws {
        let kind = FuzzJWS.parts(bytes).flatMap { guessKind($0.payload) } ?? .transaction
        let open = await verdict(bytes, as: kind, openVerifier)
        let app = await verdict(bytes, as: kind, appVerifier)
        _ = await verdict(bytes, as: kind, xcodeVerifier)

        if app.reason == "valid" {
            try require(
                open.reason == "valid" && open.payload == app.payload,
                "monotonic",
                "valid for the app, but \(open.reason) for the open verifier"
            )
        }
        // Decode → encode → decode: the payload signed again in Apple's encoding verifies to the same value.
        if open.reason == "valid", let reencoded = open.reencoded {
            let again = await verdict(Array(FuzzJWS.sign(payloadJSON: reencoded).utf8), as: kind, openVerifier)
            try require(
                again.reason == "valid" && again.payload == open.payload,
                "round trip",
                "\(kind) re-encoded as \(String(decoding: reencoded.prefix(400), as: UTF8.self)) gives \(again.reason), "
                    + "\(String(describing: again.payload)) instead of \(String(describing: open.payload))"
            )
        }
        // JSON's whitespace and member order mean nothing: the payload written otherwise, signed the same way, gets
        // the same verdict and value.
        if let (_, payload, _) = FuzzJWS.parts(bytes), payload.count < 16 * 1024, let tree = JSONTree.parse(payload),
            !tree.hasDuplicateKeys
        {
            var random = FuzzRandom(seed: UInt64(payload.count))
            let plain = await verdict(Array(FuzzJWS.sign(payloadJSON: payload).utf8), as: kind, openVerifier)
            let varied = await verdict(
                Array(FuzzJWS.sign(payloadJSON: tree.reformatted(&random, reversed: true)).utf8),
                as: kind,
                openVerifier
            )
            try require(
                plain.reason == varied.reason && plain.payload == varied.payload,
                "ignored bytes",
                "\(kind): \(plain.reason) as written, \(varied.reason) with other whitespace and member order"
            )
        }
    }

    static func verdict(_ bytes: [UInt8], as kind: JWSPayloadKind, _ verifier: SignedDataVerifier) async -> Verdict {
        switch kind {
        case .transaction: summarize(await verifier.verify(bytes: bytes, as: JWSTransactionDecodedPayload.self))
        case .renewalInfo: summarize(await verifier.verify(bytes: bytes, as: JWSRenewalInfoDecodedPayload.self))
        case .appTransaction: summarize(await verifier.verify(bytes: bytes, as: AppTransaction.self))
        case .notification: summarize(await verifier.verify(bytes: bytes, as: ResponseBodyV2DecodedPayload.self))
        case .realtimeRequest: summarize(await verifier.verify(bytes: bytes, as: DecodedRealtimeRequestBody.self))
        }
    }

    static func summarize<Payload: JWSPayload & Hashable>(_ outcome: VerificationOutcome<VerifiedJWS<Payload>>)
        -> Verdict
    {
        switch outcome {
        case .valid(let verified):
            Verdict(
                reason: "valid",
                payload: AnyHashable(verified.payload),
                reencoded: try? Array(AppleJSON.makeEncoder().encode(verified.payload))
            )
        case .invalid(let failure): Verdict(reason: failure.reason.rawValue, payload: nil, reencoded: nil)
        }
    }

    /// The payload type a payload's keys name (what `till inspect jws --type auto` picks).
    static func guessKind(_ payload: [UInt8]) -> JWSPayloadKind? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any] else { return nil }
        let keys = Set(object.keys)
        if !keys.isDisjoint(with: ["notificationType", "notificationUUID"]) { return .notification }
        if keys.contains("receiptType") || keys.contains("originalApplicationVersion") { return .appTransaction }
        if keys.contains("userLocale") && keys.contains("requestIdentifier") { return .realtimeRequest }
        let renewal: Set = [
            "autoRenewStatus", "autoRenewProductId", "renewalDate", "expirationIntent", "isInBillingRetryPeriod",
            "recentSubscriptionStartDate", "gracePeriodExpiresDate", "priceIncreaseStatus", "renewalPrice",
        ]
        if !keys.isDisjoint(with: renewal) { return .renewalInfo }
        return .transaction
    }

    // MARK: Seeds

    /// Payloads of each type, as the simulator would sign them for the fuzz world's app.
    static let samplePayloads: [(String, String)] = [
        (
            "renewal-info",
            #"{"originalTransactionId":"2000000847061981","autoRenewProductId":"premium.monthly","productId":"premium.monthly","autoRenewStatus":1,"renewalPrice":9990,"currency":"USD","signedDate":1738645561000,"environment":"Sandbox","recentSubscriptionStartDate":1738645560000,"renewalDate":1741064760000,"expirationIntent":1,"isInBillingRetryPeriod":false,"priceIncreaseStatus":0,"gracePeriodExpiresDate":1741064760000,"offerType":2,"offerIdentifier":"winback","eligibleWinBackOfferIds":["winback"]}"#
        ),
        (
            "app-transaction",
            #"{"receiptType":"Sandbox","appAppleId":1234567890,"bundleId":"com.example.till","applicationVersion":"1","versionExternalIdentifier":0,"receiptCreationDate":1738645560000,"originalPurchaseDate":1738645560000,"originalApplicationVersion":"1.0","deviceVerification":"AAAA","deviceVerificationNonce":"7e3fb20b-4cdb-47cc-936d-99d65f608138","appTransactionId":"704289572407232543","originalPlatform":"iOS"}"#
        ),
        (
            "realtime-request",
            #"{"originalTransactionId":"2000000847061981","appAppleId":1234567890,"productId":"premium.monthly","userLocale":"en-US","requestIdentifier":"7e3fb20b-4cdb-47cc-936d-99d65f608138","environment":"Sandbox","signedDate":1738645561000}"#
        ),
    ]

    static func notificationPayload(transaction: String) -> String {
        #"{"notificationType":"DID_RENEW","subtype":"BILLING_RECOVERY","notificationUUID":"002e14d5-51f5-4503-b5a8-c3a1af68eb20","version":"2.0","signedDate":1738645561000,"data":{"appAppleId":1234567890,"bundleId":"com.example.till","bundleVersion":"1","environment":"Sandbox","signedTransactionInfo":"\#(transaction)","status":1}}"#
    }

    static func seeds() async throws -> [FuzzSeed] {
        let transaction = try FuzzPKI.jwsSigner.sign(Samples.transaction())
        var seeds = [FuzzSeed("sample-transaction", text: transaction)]
        for (name, payload) in samplePayloads {
            seeds.append(FuzzSeed("sample-\(name)", text: FuzzJWS.sign(payloadJSON: Array(payload.utf8))))
        }
        seeds.append(
            FuzzSeed(
                "sample-notification",
                text: FuzzJWS.sign(payloadJSON: Array(notificationPayload(transaction: transaction).utf8))
            )
        )
        for (path, bytes) in AppleVectors.files(under: "apple-library/mock_signed_data")
            + AppleVectors.files(under: "apple-library/xcode") + AppleVectors.files(under: "third-party/misc")
        {
            let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if FuzzJWS.looksLikeJWS(text) { seeds.append(FuzzSeed(AppleVectors.seedName(path), text: text)) }
        }
        // Apple's decoded payloads, signed by the fuzz leaf so that they verify.
        for (path, bytes) in AppleVectors.files(under: "apple-library/models")
        where path.contains("/signed") || path.hasSuffix("appTransaction.json") || path.contains("decodedRealtime") {
            seeds.append(FuzzSeed(AppleVectors.seedName(path), text: FuzzJWS.sign(payloadJSON: bytes)))
        }
        return seeds
    }
}
