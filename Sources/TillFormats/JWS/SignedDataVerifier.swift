import Crypto
import Foundation
import SwiftASN1
import TillCore
import X509

/// Verifies App Store signed data (JWS): transactions, renewal info, app transactions and notifications.
///
/// For each JWS, in Apple's order:
/// 1. three base64url segments; a header with `alg` = `ES256` and `x5c` = [leaf, intermediate, root];
/// 2. the chain from leaf and intermediate to a configured root (`x5c[2]` is not trusted, the root
///    comes from ``TrustAnchors``), RFC 5280 at the payload's `signedDate` (or the configured
///    validation time, or now), with Apple's marker extensions on leaf and intermediate;
/// 3. the ES256 signature with the leaf's key;
/// 4. bundle id, app Apple id and environment of the payload against the configuration.
///
/// Chains are cached by the header bytes, which hold the certificates: a steady stream of JWS signed
/// by the same leaf costs one signature check each.
///
/// With the environment configured as Xcode or LocalTesting the data is signed on a developer's machine by one
/// self-signed certificate (StoreKit Testing's, which Xcode exports with Editor → Save Public Certificate): `x5c`
/// must hold exactly that certificate, it must be one of the configured roots, and the signature must match its
/// key. Apple's libraries check none of this for these environments; a verifier that trusted any `x5c[0]` would
/// accept data anyone signed. Its validity period is not checked: StoreKit Testing's clock can run at any rate.
public struct SignedDataVerifier: Sendable {
    /// What a verifier accepts. Nil fields are not checked.
    public struct Configuration: Sendable {
        public var anchors: TrustAnchors
        public var bundleId: String?
        /// Compared for notifications and app transactions in the production environment.
        public var appAppleId: Int64?
        public var environment: AppStoreEnvironment?
        /// Check certificates at this instant instead of the payload's `signedDate`.
        public var validationTime: Date?
        /// The longest JWS accepted, in bytes.
        public var maximumLength: Int

        public init(
            anchors: TrustAnchors = .appleStoreKit,
            bundleId: String? = nil,
            appAppleId: Int64? = nil,
            environment: AppStoreEnvironment? = nil,
            validationTime: Date? = nil,
            maximumLength: Int = 256 * 1024
        ) {
            self.anchors = anchors
            self.bundleId = bundleId
            self.appAppleId = appAppleId
            self.environment = environment
            self.validationTime = validationTime
            self.maximumLength = maximumLength
        }
    }

    public let configuration: Configuration
    private let now: @Sendable () -> Date
    private let cache: BoundedCache<CachedHeader>
    private let validator: ChainValidator

    public init(_ configuration: Configuration, now: @escaping @Sendable () -> Date = { Date() }) {
        self.configuration = configuration
        self.now = now
        self.cache = BoundedCache()
        self.validator = ChainValidator(anchors: configuration.anchors, requirements: .receiptSigning)
    }

    /// Verifies a compact JWS and decodes its payload as `Payload`.
    public func verify<Payload: JWSPayload>(
        _ jws: String,
        as type: Payload.Type = Payload.self
    ) async -> VerificationOutcome<VerifiedJWS<Payload>> {
        await verify(bytes: Array(jws.utf8), as: type)
    }

    /// Verifies a compact JWS given as ASCII bytes.
    public func verify<Payload: JWSPayload>(
        bytes: [UInt8],
        as type: Payload.Type = Payload.self
    ) async -> VerificationOutcome<VerifiedJWS<Payload>> {
        guard bytes.count <= configuration.maximumLength else {
            return .invalid(
                .init(.tooLarge, "the JWS is \(bytes.count) bytes; the limit is \(configuration.maximumLength)")
            )
        }
        guard let jws = CompactJWS(bytes) else {
            return .invalid(.init(.invalidFormat, "a JWS has exactly three non-empty base64url segments"))
        }
        let locallySigned = configuration.environment?.isLocallySigned ?? false

        // 1. The header and its certificates, cached by the header bytes.
        let header: CachedHeader
        if let cached = cache.lookup(jws.headerSegment) {
            header = cached
        } else {
            switch Self.readHeader(jws.headerSegment, requireChain: !locallySigned) {
            case .invalid(let failure): return .invalid(failure)
            case .valid(var fresh):
                if !locallySigned, !validator.reachesRoot(fresh.leaf, intermediates: [fresh.intermediate]) {
                    fresh.unanchored = "no chain to a trusted root (issuer \(fresh.leaf.issuer))"
                }
                header = fresh
                cache[BytesKey(jws.headerSegment)] = fresh
            }
        }

        // 2. The payload, for the date the chain is checked at.
        guard let payloadBytes = Base64.decode(jws.payloadSegment, alphabet: .url) else {
            return .invalid(.init(.invalidFormat, "the payload segment is not base64url"))
        }
        let payload: Payload
        do {
            payload = try TapeDecoder.decode(Payload.self, from: payloadBytes)
        } catch {
            return .invalid(.init(.malformedPayload, "the payload is not a \(Payload.payloadKind) object: \(error)"))
        }

        // 3. The chain at the effective date; for locally signed data, its one certificate must be a configured root.
        var chain: ValidatedChain?
        if locallySigned {
            guard configuration.anchors.roots.contains(header.leaf) else {
                return .invalid(
                    .init(
                        .invalidChain,
                        "x5c[0] (\(header.leaf.subject)) is not a configured root: locally signed data is trusted only "
                            + "under the certificate that signed it (Xcode's StoreKit test certificate)"
                    )
                )
            }
        } else {
            let date = configuration.validationTime ?? payload.verificationDate ?? now()
            if let why = header.unanchored {
                // The validator's answer for a chain whose issuers lead to none of the roots, known from the header.
                return .invalid(
                    .init(.invalidChain, "certificate chain not valid at \(ReceiptDate.formatRFC3339(date)): \(why)")
                )
            }
            if let cached = header.chain, cached.isValid(at: date) {
                chain = cached
            } else {
                switch await validator.validate(leaf: header.leaf, intermediates: [header.intermediate], at: date) {
                case .invalid(let why):
                    return .invalid(
                        .init(
                            .invalidChain,
                            "certificate chain not valid at \(ReceiptDate.formatRFC3339(date)): \(why)"
                        )
                    )
                case .valid(let validated):
                    chain = validated
                    cache.update(BytesKey(jws.headerSegment)) { $0.chain = validated }
                }
            }
        }

        // 4. The signature, over `header.payload`: the digest continues from the cached state after `header.`.
        var digest = header.signingPrefix
        digest.update(data: jws.payloadSegment)
        guard let signatureBytes = Base64.decode(jws.signatureSegment, alphabet: .url), signatureBytes.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            header.key.isValidSignature(signature, for: digest.finalize())
        else {
            return .invalid(
                .init(.verificationFailure, "the ES256 signature does not match the leaf certificate's key")
            )
        }

        // 5. The app and the environment.
        if let failure = check(identity: payload.identity, kind: Payload.payloadKind) {
            return .invalid(failure)
        }
        return .valid(VerifiedJWS(payload: payload, payloadJSON: payloadBytes, header: header.header, chain: chain))
    }

    private func check(identity: PayloadIdentity, kind: JWSPayloadKind) -> VerificationFailure? {
        // Renewal info names no bundle id, and a realtime request names the app by its Apple id only.
        let checksBundle = kind != .renewalInfo && kind != .realtimeRequest
        if checksBundle, let expected = configuration.bundleId, identity.bundleId != expected {
            return .init(
                .invalidAppIdentifier,
                "signed for bundle id \(identity.bundleId ?? "(none)"), expected \(expected)"
            )
        }
        let checksAppAppleId =
            (kind == .notification || kind == .appTransaction || kind == .realtimeRequest)
            && configuration.environment == .production
        if checksAppAppleId, let expected = configuration.appAppleId, identity.appAppleId != expected {
            return .init(
                .invalidAppIdentifier,
                "signed for app Apple id \(identity.appAppleId.map(String.init) ?? "(none)"), expected \(expected)"
            )
        }
        if let expected = configuration.environment, identity.environment != expected {
            return .init(
                .invalidEnvironment,
                "signed for environment \(identity.environment?.rawValue ?? "(none)"), expected \(expected)"
            )
        }
        return nil
    }

    /// Decodes and checks a header: ES256, and a three-certificate `x5c` (exactly one when locally signed).
    private static func readHeader(_ segment: ArraySlice<UInt8>, requireChain: Bool) -> VerificationOutcome<
        CachedHeader
    > {
        guard let json = Base64.decode(segment, alphabet: .url),
            let header = try? JSONDecoder().decode(JWSHeader.self, from: Data(json))
        else {
            return .invalid(.init(.invalidFormat, "the header is not base64url JSON"))
        }
        guard let x5c = header.x5c, !x5c.isEmpty else {
            return .invalid(.init(.invalidFormat, "the header has no x5c certificate chain"))
        }
        guard header.alg == "ES256" else {
            return .invalid(.init(.unsupportedAlgorithm, "alg is \(header.alg ?? "(none)"); only ES256 is accepted"))
        }
        if requireChain, x5c.count != 3 {
            return .invalid(
                .init(.invalidChainLength, "x5c holds \(x5c.count) certificates; leaf, intermediate and root expected")
            )
        }
        if !requireChain, x5c.count != 1 {
            return .invalid(
                .init(.invalidChainLength, "x5c holds \(x5c.count) certificates; locally signed data carries one")
            )
        }
        var certificates: [Certificate] = []
        for (index, entry) in x5c.enumerated() {
            guard let der = Base64.decode(entry, alphabet: .standard),
                let certificate = try? Certificate(derEncoded: der)
            else {
                return .invalid(.init(.invalidCertificate, "x5c[\(index)] is not a base64 DER certificate"))
            }
            certificates.append(certificate)
        }
        guard let key = P256.Signing.PublicKey(certificates[0].publicKey) else {
            return .invalid(.init(.invalidCertificate, "the leaf certificate's key is not ECDSA P-256"))
        }
        var signingPrefix = SHA256()
        signingPrefix.update(data: segment)
        signingPrefix.update(data: [UInt8(ascii: ".")])
        return .valid(
            CachedHeader(
                header: header,
                leaf: certificates[0],
                intermediate: certificates.count > 1 ? certificates[1] : certificates[0],
                key: key,
                signingPrefix: signingPrefix,
                chain: nil
            )
        )
    }
}

/// A verified JWS: the decoded payload, its raw JSON, and the chain that signed it.
public struct VerifiedJWS<Payload: JWSPayload>: Sendable {
    public var payload: Payload
    /// The payload's JSON exactly as signed.
    public var payloadJSON: [UInt8]
    public var header: JWSHeader
    /// Nil for locally signed environments (Xcode, LocalTesting), which have no chain to a root.
    public var chain: ValidatedChain?
}

/// A decoded header and what was learnt about its chain.
struct CachedHeader: Sendable {
    var header: JWSHeader
    var leaf: Certificate
    var intermediate: Certificate
    var key: P256.Signing.PublicKey
    /// SHA-256 state after absorbing `header.`: every JWS with this header continues from it.
    var signingPrefix: SHA256
    /// The last validated chain and its validity period; nil until validated once.
    var chain: ValidatedChain?
    /// Why no date can make the chain valid, when its issuers' names lead to none of the verifier's roots: found once
    /// a header, not at every JWS. The server tries Apple's roots before the simulator's, so each sandbox JWS from the
    /// simulator was refused by Apple's verifier first, and the refusal's text (the issuer's name) was 120 of a
    /// purchase's 915 allocations.
    var unanchored: String?
}
