import Crypto
import Foundation
import Testing
import TillCore
import X509

@testable import TillFormats

/// A payload carrying only what the verifier looks at, so the verifier is tested on its own.
struct ProbePayload: JWSPayload, Equatable {
    static let payloadKind = JWSPayloadKind.transaction
    var bundleId: String?
    var environment: AppStoreEnvironment?
    var signedDate: Date?
    var productId: String?
    var verificationDate: Date? { signedDate }
    var identity: PayloadIdentity { PayloadIdentity(bundleId: bundleId, environment: environment) }
}

struct ProbeRenewal: JWSPayload {
    static let payloadKind = JWSPayloadKind.renewalInfo
    var environment: AppStoreEnvironment?
    var signedDate: Date?
    var verificationDate: Date? { signedDate }
    var identity: PayloadIdentity { PayloadIdentity(environment: environment) }
}

enum TestAuthorities {
    static let jwsAuthority = try! TestPKI.makeAuthority(kind: .p256, name: "Till JWS Test")
    static let otherAuthority = try! TestPKI.makeAuthority(kind: .p256, name: "Impostor")
    static let receiptAuthority = try! TestPKI.makeAuthority(kind: .rsa2048, name: "Till Receipt Test")
    static var jwsSigner: JWSSigner {
        try! JWSSigner(key: jwsAuthority.leafKey.p256!, chain: jwsAuthority.chain)
    }
}

struct SignedDataVerifierTests {
    let signedDate = Date(millisecondsSince1970: 1_700_000_000_000)

    func verifier(
        bundleId: String? = "com.example.till",
        environment: AppStoreEnvironment? = .sandbox,
        anchors: TrustAnchors = TestAuthorities.jwsAuthority.anchors
    ) -> SignedDataVerifier {
        SignedDataVerifier(.init(anchors: anchors, bundleId: bundleId, environment: environment))
    }

    func probe(_ bundleId: String = "com.example.till", _ environment: AppStoreEnvironment = .sandbox) -> ProbePayload {
        ProbePayload(bundleId: bundleId, environment: environment, signedDate: signedDate, productId: "gems.100")
    }

    @Test func signedByATrustedAuthorityVerifiesAndDecodes() async throws {
        let jws = try TestAuthorities.jwsSigner.sign(probe())
        let result = await verifier().verify(jws, as: ProbePayload.self)
        let verified = try #require(result.value)
        #expect(verified.payload == probe())
        #expect(verified.chain?.certificates.count == 3)
        #expect(verified.header.alg == "ES256")
    }

    @Test func wrongBundleAndEnvironmentAreRefusedAfterTheSignature() async throws {
        let other = try TestAuthorities.jwsSigner.sign(probe("com.example.other"))
        #expect(await verifier().verify(other, as: ProbePayload.self).failure?.reason == .invalidAppIdentifier)
        let production = try TestAuthorities.jwsSigner.sign(probe("com.example.till", .production))
        #expect(await verifier().verify(production, as: ProbePayload.self).failure?.reason == .invalidEnvironment)
        // Renewal info carries no bundle id: only the environment is checked.
        let renewal = try TestAuthorities.jwsSigner.sign(ProbeRenewal(environment: .sandbox, signedDate: signedDate))
        #expect(await verifier().verify(renewal, as: ProbeRenewal.self).isValid)
    }

    @Test func anUntrustedAuthorityIsRefused() async throws {
        let signer = try JWSSigner(
            key: TestAuthorities.otherAuthority.leafKey.p256!,
            chain: TestAuthorities.otherAuthority.chain
        )
        let jws = try signer.sign(probe())
        #expect(await verifier().verify(jws, as: ProbePayload.self).failure?.reason == .invalidChain)
        // Putting the trusted root in x5c[2] does not help: the anchor comes from the configuration.
        let mixed = try JWSSigner(
            key: TestAuthorities.otherAuthority.leafKey.p256!,
            chain: [
                TestAuthorities.otherAuthority.leaf, TestAuthorities.otherAuthority.intermediate,
                TestAuthorities.jwsAuthority.root,
            ]
        )
        #expect(
            await verifier().verify(try mixed.sign(probe()), as: ProbePayload.self).failure?.reason == .invalidChain
        )
        // A header whose chain leads to none of the roots is known as such from the second JWS on (the server tries
        // Apple's roots before the simulator's): the same refusal, at each JWS's own date.
        let one = verifier()
        var later = probe()
        later.signedDate = signedDate.addingTimeInterval(86_400)
        let refusals = [
            await one.verify(jws, as: ProbePayload.self).failure,
            await one.verify(jws, as: ProbePayload.self).failure,
            await one.verify(try signer.sign(later), as: ProbePayload.self).failure,
        ]
        let issuer = "no chain to a trusted root (issuer \(TestAuthorities.otherAuthority.leaf.issuer))"
        #expect(refusals.map(\.?.reason) == [.invalidChain, .invalidChain, .invalidChain])
        #expect(refusals[0]?.detail == refusals[1]?.detail)
        #expect(refusals[0]?.detail == "certificate chain not valid at 2023-11-14T22:13:20Z: \(issuer)")
        #expect(refusals[2]?.detail == "certificate chain not valid at 2023-11-15T22:13:20Z: \(issuer)")
    }

    @Test func aPayloadSwappedUnderAValidSignatureIsRefused() async throws {
        let good = try TestAuthorities.jwsSigner.sign(probe())
        let forged = try TestAuthorities.jwsSigner.sign(
            ProbePayload(
                bundleId: "com.example.till",
                environment: .sandbox,
                signedDate: signedDate,
                productId: "gems.10000"
            )
        )
        let parts = good.split(separator: ".")
        let swapped = [parts[0], forged.split(separator: ".")[1], parts[2]].joined(separator: ".")
        #expect(await verifier().verify(swapped, as: ProbePayload.self).failure?.reason == .verificationFailure)
    }

    @Test func theChainIsCheckedAtTheSignedDate() async throws {
        let future = ProbePayload(
            bundleId: "com.example.till",
            environment: .sandbox,
            signedDate: Date(timeIntervalSince1970: 4_000_000_000)
        )
        let jws = try TestAuthorities.jwsSigner.sign(future)
        #expect(await verifier().verify(jws, as: ProbePayload.self).failure?.reason == .invalidChain)
        // The same header, already cached as valid for another date, is re-checked for this one.
        #expect(await verifier().verify(try TestAuthorities.jwsSigner.sign(probe()), as: ProbePayload.self).isValid)
    }

    @Test(arguments: ["", "a.b", "a.b.c.d", "..", "a..c", "x.y.z"])
    func malformedCompactSerializationsAreRefused(_ text: String) async {
        let failure = await verifier().verify(text, as: ProbePayload.self).failure
        #expect(failure?.reason == .invalidFormat)
    }

    @Test func onlyES256IsAccepted() async throws {
        let jws = try TestAuthorities.jwsSigner.sign(probe())
        let parts = jws.split(separator: ".")
        var header = String(decoding: Base64.decode(parts[0], alphabet: .url)!, as: UTF8.self)
        header = header.replacingOccurrences(of: "\"ES256\"", with: "\"none\"")
        let tampered = [Base64.encode(Array(header.utf8), alphabet: .url), String(parts[1]), String(parts[2])].joined(
            separator: "."
        )
        #expect(await verifier().verify(tampered, as: ProbePayload.self).failure?.reason == .unsupportedAlgorithm)
    }

    /// StoreKit Testing in Xcode signs with one self-signed certificate: data of the Xcode environment is believed only
    /// under that certificate, configured as a root, never under whatever certificate `x5c` brings.
    @Test func locallySignedDataIsTrustedOnlyUnderItsConfiguredCertificate() async throws {
        func selfSigned(_ name: String) throws -> (JWSSigner, Certificate) {
            let key = P256.Signing.PrivateKey()
            let certificate = try TestPKI.makeSelfSigned(
                key: Certificate.PrivateKey(key),
                commonName: name,
                validFrom: Date(timeIntervalSince1970: 1_577_836_800),
                validUntil: Date(timeIntervalSince1970: 1_609_459_200)
            )
            return (try JWSSigner(key: key, chain: [certificate], keyId: "Apple_Xcode_Key", type: "JWT"), certificate)
        }
        let (xcode, certificate) = try selfSigned("StoreKit Testing in Xcode")
        let (other, otherCertificate) = try selfSigned("StoreKit Testing in Xcode")
        let trusted = verifier(environment: .xcode, anchors: TrustAnchors(roots: [certificate]))
        // Signed in 2023, outside the certificate's validity: StoreKit Testing's clock is the developer's to set.
        let jws = try xcode.sign(probe("com.example.till", .xcode))
        #expect(await trusted.verify(jws, as: ProbePayload.self).value?.payload.environment == .xcode)

        // Another key, even with the same name, and no configured certificate at all, are refused.
        let impostor = try other.sign(probe("com.example.till", .xcode))
        #expect(await trusted.verify(impostor, as: ProbePayload.self).failure?.reason == .invalidChain)
        #expect(await verifier(environment: .xcode).verify(jws, as: ProbePayload.self).failure?.reason == .invalidChain)
        let both = verifier(environment: .xcode, anchors: TrustAnchors(roots: [otherCertificate, certificate]))
        #expect(await both.verify(impostor, as: ProbePayload.self).isValid)

        // Exactly the one certificate in x5c, and the configured environment.
        let padded = try JWSSigner(key: P256.Signing.PrivateKey(), chain: [certificate, certificate])
        #expect(
            await trusted.verify(try padded.sign(probe("com.example.till", .xcode)), as: ProbePayload.self).failure?
                .reason == .invalidChainLength
        )
        let relabelled = try xcode.sign(probe("com.example.till", .sandbox))
        #expect(await trusted.verify(relabelled, as: ProbePayload.self).failure?.reason == .invalidEnvironment)
        #expect(await verifier().verify(relabelled, as: ProbePayload.self).failure?.reason == .invalidChainLength)
    }
}
