import Foundation
import Testing
import TillCore

@testable import TillFormats

/// One random change to a byte string: a flipped bit, a replaced, deleted or inserted byte, or a cut.
func mutate(_ bytes: [UInt8], using rng: inout SeededGenerator) -> [UInt8] {
    var copy = bytes
    let index = Int.random(in: 0..<copy.count, using: &rng)
    switch Int.random(in: 0..<6, using: &rng) {
    case 0: copy[index] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
    case 1: copy[index] = copy[index] &+ UInt8.random(in: 1...255, using: &rng)
    case 2: copy.remove(at: index)
    case 3: copy.insert(UInt8.random(in: 0...255, using: &rng), at: index)
    case 4: copy.removeLast(Int.random(in: 1...min(64, copy.count), using: &rng))
    default:
        let other = Int.random(in: 0..<copy.count, using: &rng)
        if copy[index] == copy[other] { copy[index] ^= 0x80 } else { copy.swapAt(index, other) }
    }
    return copy
}

/// Property: no change to a valid receipt or JWS verifies, and none crashes the verifier.
struct MutationTests {
    static let rounds = 2_000

    @Test(arguments: [ReceiptSigner.Layout.appStore, .xcode])
    func noMutationOfAValidReceiptVerifies(layout: ReceiptSigner.Layout) async throws {
        let original = try ReceiptFixtures.signer(layout: layout, signedAttributes: layout == .xcode)
            .sign(ReceiptFixtures.receipt(purchases: 3))
        let verifier = ReceiptFixtures.verifier
        #expect(await verifier.verify(der: original).isValid)
        var rng = SeededGenerator(seed: layout == .xcode ? 2 : 1)
        var reasons: [VerificationFailure.Reason: Int] = [:]
        for round in 0..<Self.rounds {
            let mutated = mutate(original, using: &rng)
            guard mutated != original else { continue }
            let outcome = await verifier.verify(der: mutated)
            if outcome.isValid {
                let at =
                    (0..<min(original.count, mutated.count)).first { original[$0] != mutated[$0] }
                    ?? min(original.count, mutated.count)
                Issue.record(
                    "mutation \(round) verified: first difference at \(at), \(original.count) → \(mutated.count) bytes, around \(Array(original[max(0, at - 8)..<min(original.count, at + 8)])) → \(Array(mutated[max(0, at - 8)..<min(mutated.count, at + 8)]))"
                )
            }
            if let reason = outcome.failure?.reason { reasons[reason, default: 0] += 1 }
        }
        // The mutations reach the signature check, not only the parser.
        #expect(reasons[.verificationFailure, default: 0] > 0)
        #expect(reasons[.invalidFormat, default: 0] > 0)
    }

    @Test func noMutationOfAValidJWSVerifies() async throws {
        let original = Array(
            try TestAuthorities.jwsSigner.sign(
                ProbePayload(
                    bundleId: "com.example.till",
                    environment: .sandbox,
                    signedDate: Date(timeIntervalSince1970: 1_700_000_000),
                    productId: "gems"
                )
            ).utf8
        )
        let verifier = SignedDataVerifier(
            .init(anchors: TestAuthorities.jwsAuthority.anchors, bundleId: "com.example.till", environment: .sandbox)
        )
        #expect(await verifier.verify(bytes: original, as: ProbePayload.self).isValid)
        var rng = SeededGenerator(seed: 3)
        for round in 0..<Self.rounds {
            let mutated = mutate(original, using: &rng)
            guard mutated != original else { continue }
            #expect(
                !(await verifier.verify(bytes: mutated, as: ProbePayload.self).isValid),
                "mutation \(round) verified"
            )
        }
    }

    @Test func randomBytesNeverCrashTheDecoders() async {
        var rng = SeededGenerator(seed: 4)
        let receipts = ReceiptFixtures.verifier
        for _ in 0..<Self.rounds {
            let length = Int.random(in: 0..<300, using: &rng)
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if !bytes.isEmpty, Bool.random(using: &rng) { bytes[0] = 0x30 }
            #expect(!(await receipts.verify(der: bytes).isValid))
            _ = try? ReceiptVerifier.decodeWithoutVerifying(der: bytes)
            _ = Base64.decode(bytes, alphabet: .url)
        }
    }
}
