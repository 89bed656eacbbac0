import Foundation
import TillCore
import X509

/// What `till inspect` does with one line: verify (or only decode) a receipt or a JWS and describe it
/// as one JSON object: `{"valid": …, "reason": …, "payload": {…}}`.
///
/// Payloads use Apple's names: a JWS payload is its JSON as signed; an app receipt is verifyReceipt's
/// `receipt` object plus the attributes verifyReceipt does not show (`opaque_value`, `sha1_hash`,
/// `other_attributes`, `product_type` per purchase); an iOS 6-style receipt is its purchase-info keys.
public struct Inspector: Sendable {
    /// What the inspector checks.
    public struct Options: Sendable {
        /// Replaces Apple's roots when not empty: the self-signed ones are roots, the others intermediates.
        public var roots: [Certificate]
        public var bundleId: String?
        public var environment: AppStoreEnvironment?
        public var appAppleId: Int64?
        /// Checks certificates at this instant instead of the signed date.
        public var validationTime: Date?
        /// Decode only; the output says `"reason": "notVerified"`.
        public var verify: Bool
        /// The JWS payload kind, or nil to tell it from the payload's keys.
        public var jwsKind: JWSPayloadKind?

        public init(
            roots: [Certificate] = [],
            bundleId: String? = nil,
            environment: AppStoreEnvironment? = nil,
            appAppleId: Int64? = nil,
            validationTime: Date? = nil,
            verify: Bool = true,
            jwsKind: JWSPayloadKind? = nil
        ) {
            self.roots = roots
            self.bundleId = bundleId
            self.environment = environment
            self.appAppleId = appAppleId
            self.validationTime = validationTime
            self.verify = verify
            self.jwsKind = jwsKind
        }
    }

    public let options: Options
    private let jwsVerifier: SignedDataVerifier
    private let receiptVerifier: ReceiptVerifier
    private let transactionReceiptVerifier: TransactionReceiptVerifier

    public init(_ options: Options) {
        self.options = options
        var jwsAnchors = TrustAnchors.appleStoreKit
        var receiptAnchors = TrustAnchors.appleReceipts
        if !options.roots.isEmpty {
            // As the server's sandbox roots: the self-signed certificates are roots, the others intermediates, which
            // complete an iOS 6-style receipt's chain (it carries only its leaf) and vouch for nothing by themselves.
            let roots = options.roots.filter { $0.subject == $0.issuer }
            let intermediates = options.roots.filter { $0.subject != $0.issuer }
            jwsAnchors.roots = roots
            receiptAnchors.roots = roots
            receiptAnchors.intermediates += intermediates
        }
        jwsVerifier = SignedDataVerifier(
            .init(
                anchors: jwsAnchors,
                bundleId: options.bundleId,
                appAppleId: options.appAppleId,
                environment: options.environment,
                validationTime: options.validationTime
            )
        )
        receiptVerifier = ReceiptVerifier(
            .init(
                anchors: receiptAnchors,
                bundleId: options.bundleId,
                environment: options.environment,
                appAppleId: options.appAppleId,
                validationTime: options.validationTime
            )
        )
        transactionReceiptVerifier = TransactionReceiptVerifier(
            .init(
                anchors: receiptAnchors,
                bundleId: options.bundleId,
                environment: options.environment,
                validationTime: options.validationTime
            )
        )
    }

    /// The report of one line.
    public struct Report: Sendable {
        public var valid: Bool
        /// `valid`, `notVerified`, or a ``VerificationFailure/Reason``.
        public var reason: String
        public var detail: String?
        public var kind: String?
        /// The payload as a JSON object's bytes, when it could be decoded.
        public var payload: [UInt8]?

        /// The report as one line of JSON, keys in a fixed order: valid, reason, detail, kind, appleStatus, payload.
        public func jsonLine() -> String {
            var fields: [(String, Any)] = [("valid", valid), ("reason", reason)]
            if let detail { fields.append(("detail", detail)) }
            if let kind { fields.append(("kind", kind)) }
            if !valid, reason != "notVerified" {
                fields.append(("appleStatus", VerificationFailure.Reason(rawValue: reason).appleStatus))
            }
            let object = payload.flatMap {
                try? JSONSerialization.jsonObject(with: Data($0), options: [.fragmentsAllowed])
            }
            fields.append(("payload", object ?? NSNull()))
            let members = fields.map { key, value in
                let encoded =
                    (try? JSONSerialization.data(
                        withJSONObject: value,
                        options: [.sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed]
                    )) ?? Data("null".utf8)
                return "\"\(key)\":" + String(decoding: encoded, as: UTF8.self)
            }
            return "{" + members.joined(separator: ",") + "}"
        }
    }

    // MARK: JWS

    /// Inspects one compact JWS.
    public func inspectJWS(_ line: String) async -> Report {
        let bytes = Array(line.utf8)
        let rawPayload = Self.rawPayload(of: bytes)
        let kind = options.jwsKind ?? rawPayload.flatMap(Self.guessKind) ?? .transaction
        return await report(kind: kind.rawValue, payload: rawPayload, notDecodable: "not a compact JWS") {
            switch kind {
            case .transaction: await jwsVerifier.verify(bytes: bytes, as: JWSTransactionDecodedPayload.self).failure
            case .renewalInfo: await jwsVerifier.verify(bytes: bytes, as: JWSRenewalInfoDecodedPayload.self).failure
            case .appTransaction: await jwsVerifier.verify(bytes: bytes, as: AppTransaction.self).failure
            case .notification: await jwsVerifier.verify(bytes: bytes, as: ResponseBodyV2DecodedPayload.self).failure
            case .realtimeRequest:
                await jwsVerifier.verify(bytes: bytes, as: DecodedRealtimeRequestBody.self).failure
            }
        }
    }

    /// The report for a payload (nil when it cannot be decoded) and the failure `verify` finds, if any.
    private func report(
        kind: String,
        payload: [UInt8]?,
        notDecodable: String,
        verify: () async -> VerificationFailure?
    ) async -> Report {
        guard options.verify else {
            guard let payload else {
                return Report(
                    valid: false,
                    reason: VerificationFailure.Reason.invalidFormat.rawValue,
                    detail: notDecodable,
                    kind: kind
                )
            }
            return Report(
                valid: false,
                reason: "notVerified",
                detail: "decoded only (--no-verify)",
                kind: kind,
                payload: payload
            )
        }
        if let failure = await verify() {
            return Report(
                valid: false,
                reason: failure.reason.rawValue,
                detail: failure.detail,
                kind: kind,
                payload: payload
            )
        }
        return Report(valid: true, reason: "valid", kind: kind, payload: payload)
    }

    /// The payload JSON of a compact JWS, without any check.
    static func rawPayload(of bytes: [UInt8]) -> [UInt8]? {
        guard let jws = CompactJWS(bytes), let payload = Base64.decode(jws.payloadSegment, alphabet: .url),
            (try? JSONSerialization.jsonObject(with: Data(payload))) is [String: Any]
        else { return nil }
        return payload
    }

    /// Tells the kind of a payload from the keys only that kind has.
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
        if !keys.isDisjoint(with: ["transactionId", "productId", "bundleId", "purchaseDate", "type"]) {
            return .transaction
        }
        return .renewalInfo
    }

    // MARK: Receipts

    /// Inspects one base64 receipt: an app receipt (PKCS#7) or an iOS 6-style transaction receipt.
    public func inspectReceipt(_ line: String) async -> Report {
        guard let bytes = Base64.decode(line, alphabet: .standard), let first = bytes.first else {
            return Report(
                valid: false,
                reason: VerificationFailure.Reason.invalidFormat.rawValue,
                detail: "not base64",
                kind: nil
            )
        }
        if first == UInt8(ascii: "{") { return await inspectTransactionReceipt(line) }
        let payload = (try? ReceiptVerifier.decodeWithoutVerifying(der: bytes)).map(Self.describe)
        return await report(kind: "appReceipt", payload: payload, notDecodable: "not a PKCS#7 receipt") {
            await receiptVerifier.verify(der: bytes).failure
        }
    }

    private func inspectTransactionReceipt(_ line: String) async -> Report {
        let payload = (try? TransactionReceipt.decode(base64: line)).map(Self.describe)
        return await report(kind: "transactionReceipt", payload: payload, notDecodable: "not a transaction receipt") {
            await transactionReceiptVerifier.verify(base64: line).failure
        }
    }

    /// verifyReceipt's `receipt` object for an app receipt, with the attributes it leaves out.
    static func describe(_ receipt: AppReceipt) -> [UInt8] {
        let encoder = JSONEncoder()
        guard let data = try? encoder.encode(ReceiptInfoJSON(receipt)),
            var object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return [] }
        object["opaque_value"] = hex(receipt.opaqueValue)
        object["sha1_hash"] = hex(receipt.sha1Hash)
        if !receipt.otherAttributes.isEmpty { object["other_attributes"] = receipt.otherAttributes.map(describe) }
        if var inApp = object["in_app"] as? [[String: Any]] {
            for (index, purchase) in receipt.inAppPurchases.enumerated() where index < inApp.count {
                if let code = purchase.productTypeCode { inApp[index]["product_type"] = String(code) }
                if !purchase.otherAttributes.isEmpty {
                    inApp[index]["other_attributes"] = purchase.otherAttributes.map(describe)
                }
            }
            object["in_app"] = inApp
        }
        return serialize(object)
    }

    /// The purchase-info keys of an iOS 6-style receipt, with the outer keys other than the signature.
    static func describe(_ receipt: TransactionReceipt) -> [UInt8] {
        var object: [String: Any] = receipt.purchaseInfo.fields
        if let environment = receipt.environmentValue { object["environment"] = environment }
        if let pod = receipt.pod { object["pod"] = pod }
        if let status = receipt.signingStatus { object["signing-status"] = status }
        if let version = receipt.signatureVersion { object["signature-version"] = Int(version) }
        return serialize(object)
    }

    private static func describe(_ attribute: ReceiptAttribute) -> [String: Any] {
        ["type": attribute.type, "version": attribute.version, "value": hex(Array(attribute.value))]
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        Hex.lowercase(bytes)
    }

    private static func serialize(_ object: [String: Any]) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data())
    }
}
