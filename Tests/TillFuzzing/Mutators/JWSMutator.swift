import Crypto
import Foundation
import TillFormats

/// Compact JWS as the fuzz targets make and take them apart: signing with ``FuzzPKI``'s leaf, and mutations that go
/// through the layers (base64url, the header's JSON and its `x5c` DER, the payload's JSON and any JWS inside it) and
/// sign again, so that a mutated payload still reaches the checks behind the signature.
public enum FuzzJWS {
    /// `{"alg":"ES256","x5c":[leaf, intermediate, root]}` of ``FuzzPKI/jws``.
    public static let headerJSON: [UInt8] = {
        let x5c = FuzzPKI.jws.chain.map { "\"" + Base64.encode(FuzzPKI.der($0)) + "\"" }.joined(separator: ",")
        return Array(#"{"alg":"ES256","x5c":[\#(x5c)]}"#.utf8)
    }()

    /// Every key of every signed payload and of the header: what a renamed key is renamed to.
    public static let knownKeys: [String] = [
        "alg", "x5c", "kid", "typ", "transactionId", "originalTransactionId", "webOrderLineItemId", "bundleId",
        "productId", "subscriptionGroupIdentifier", "purchaseDate", "originalPurchaseDate", "expiresDate", "quantity",
        "type", "appAccountToken", "inAppOwnershipType", "signedDate", "revocationReason", "revocationDate",
        "isUpgraded", "offerType", "offerIdentifier", "environment", "storefront", "storefrontId",
        "transactionReason", "currency", "price", "offerDiscountType", "appTransactionId", "offerPeriod",
        "autoRenewProductId", "autoRenewStatus", "expirationIntent", "gracePeriodExpiresDate",
        "isInBillingRetryPeriod", "priceIncreaseStatus", "recentSubscriptionStartDate", "renewalDate",
        "renewalPrice", "eligibleWinBackOfferIds", "receiptType", "appAppleId", "applicationVersion",
        "originalApplicationVersion", "receiptCreationDate", "originalPurchaseDate", "preorderDate",
        "deviceVerification", "deviceVerificationNonce", "originalPlatform", "notificationType", "subtype",
        "notificationUUID", "version", "data", "summary", "externalPurchaseToken", "appData",
        "signedTransactionInfo", "signedRenewalInfo", "status", "consumptionRequestReason", "requestIdentifier",
        "userLocale", "billingPlanType", "commitmentInfo",
    ]

    /// `headerJSON` in base64url, made once: most inputs are signed under it.
    static let encodedHeader = Base64.encode(headerJSON, alphabet: .url)

    /// Signs `payloadJSON` under `headerJSON` with the fuzz leaf's key (whatever the header says).
    public static func sign(payloadJSON: [UInt8], headerJSON: [UInt8] = headerJSON) -> String {
        let header = headerJSON == Self.headerJSON ? encodedHeader : Base64.encode(headerJSON, alphabet: .url)
        let input = header + "." + Base64.encode(payloadJSON, alphabet: .url)
        do {
            let signature = try FuzzPKI.jws.leafKey.p256!.signature(for: Array(input.utf8))
            return input + "." + Base64.encode(Array(signature.rawRepresentation), alphabet: .url)
        } catch {
            fatalError("FuzzJWS: signing failed: \(error)")
        }
    }

    /// The decoded header, payload and signature of a compact JWS (nil unless three base64url segments).
    public static func parts(_ jws: [UInt8]) -> (header: [UInt8], payload: [UInt8], signature: [UInt8])? {
        let segments = jws.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard segments.count == 3, let header = Base64.decode(segments[0], alphabet: .url),
            let payload = Base64.decode(segments[1], alphabet: .url),
            let signature = Base64.decode(segments[2], alphabet: .url)
        else { return nil }
        return (header, payload, signature)
    }

    /// Whether `text` looks like a compact JWS (worth mutating as one).
    public static func looksLikeJWS(_ text: String) -> Bool {
        text.utf8.count > 20 && text.utf8.filter { $0 == UInt8(ascii: ".") }.count == 2
            && text.utf8.allSatisfy {
                $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
                    || ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A)
            }
    }

    /// The payload mutator: JSON, with any JWS inside a string (a notification's `signedTransactionInfo`) mutated
    /// and signed again in turn.
    public static let payloadMutator = JSONMutator(knownKeys: knownKeys) { text, random, bytes in
        guard looksLikeJWS(text) else { return nil }
        return String(decoding: mutate(Array(text.utf8), &random, bytes, depth: 1), as: UTF8.self)
    }

    /// Mutates a compact JWS through its layers (most often its payload, then signed again).
    public static func mutate(_ jws: [UInt8], _ random: inout FuzzRandom, _ bytes: ByteMutator, depth: Int = 0)
        -> [UInt8]
    {
        guard let (header, payload, signature) = parts(jws), depth < 3 else {
            var copy = jws
            bytes(&copy, maximumLength: jws.count + 64)
            return copy
        }
        switch random.int(0...19) {
        case 0...8:
            // The payload, signed again under our header: the checks behind the signature see it.
            var mutated = payload
            for _ in 0..<random.int(1...2) {
                if var tree = JSONTree.parse(mutated) {
                    payloadMutator.mutate(&tree, &random, bytes)
                    mutated = tree.bytes
                } else {
                    bytes(&mutated, maximumLength: mutated.count + 64)
                }
            }
            return Array(sign(payloadJSON: mutated).utf8)
        case 9...11:
            // The header (alg, x5c and its certificates), signed again with our key.
            return Array(sign(payloadJSON: payload, headerJSON: mutateHeader(header, &random, bytes)).utf8)
        case 12:
            // The same payload signed again: an input from elsewhere becomes one our roots vouch for.
            return Array(sign(payloadJSON: payload).utf8)
        case 13, 14:
            // The signature's bytes, or its text's last character (canonical base64url).
            var text = Array(jws)
            if random.chance(1, in: 2), let last = text.indices.last {
                text[last] = random.element(of: Array("AQgw_-Ez".utf8))
                return text
            }
            var mutated = signature
            bytes(&mutated, maximumLength: 80)
            let segments = jws.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
            return Array(segments[0]) + [UInt8(ascii: ".")] + Array(segments[1]) + [UInt8(ascii: ".")]
                + Array(Base64.encode(mutated, alphabet: .url).utf8)
        case 15:
            // The compact form itself: segments dropped, repeated, reordered, dots added.
            var segments = jws.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).map(Array.init)
            switch random.int(0...3) {
            case 0: segments.remove(at: random.int(0...2))
            case 1: segments.insert(segments[random.int(0...2)], at: random.int(0...3))
            case 2: segments.swapAt(random.int(0...2), random.int(0...2))
            default: segments[random.int(0...2)] = []
            }
            return Array(segments.joined(separator: [UInt8(ascii: ".")]))
        default:
            var copy = jws
            bytes(&copy, maximumLength: jws.count + 64)
            return copy
        }
    }

    /// A header with its algorithm, its `x5c` list or one of its certificates changed.
    static func mutateHeader(_ header: [UInt8], _ random: inout FuzzRandom, _ bytes: ByteMutator) -> [UInt8] {
        guard case .object(var members) = JSONTree.parse(header) ?? .object([]) else { return header }
        let x5cKey = Array("\"x5c\"".utf8)
        let algKey = Array("\"alg\"".utf8)
        switch random.int(0...5) {
        case 0:
            let alg = random.element(of: ["\"none\"", "\"HS256\"", "\"RS256\"", "\"ES384\"", "\"es256\"", "null", "1"])
            members.removeAll { $0.key == algKey }
            members.append(.init(key: algKey, value: .scalar(Array(alg.utf8))))
        case 1...3:
            guard let index = members.firstIndex(where: { $0.key == x5cKey }),
                case .array(var certificates) = members[index].value, !certificates.isEmpty
            else { break }
            let at = random.int(0...certificates.count - 1)
            switch random.int(0...4) {
            case 0: certificates.remove(at: at)
            case 1: certificates.insert(certificates[at], at: random.int(0...certificates.count))
            case 2: certificates.swapAt(at, random.int(0...certificates.count - 1))
            case 3: certificates = [certificates[at]]
            default:
                // A certificate's DER, through the DER mutator.
                if let text = certificates[at].plainString,
                    let der = Base64.decode(Array(text.utf8), alphabet: .standard)
                {
                    certificates[at] = JSONTree.string(Base64.encode(DERMutator.mutate(der, &random, bytes)))
                }
            }
            members[index].value = .array(certificates)
        default:
            var tree = JSONTree.object(members)
            JSONMutator(knownKeys: ["alg", "x5c", "kid", "typ", "jwk", "crit"]).mutate(&tree, &random, bytes)
            return tree.bytes
        }
        return JSONTree.object(members).bytes
    }
}
