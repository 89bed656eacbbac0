import Crypto
import Foundation
import Testing
import TillContract
import TillCore
import TillFormats
import TillSnapshot

/// Entitlement snapshots: signed by the server's key, checked by apps that know it, useless once edited.
struct SnapshotSignatureTests {
    let key = P256.Signing.PrivateKey()
    let snapshot = EntitlementSnapshot(
        bundleId: "com.example.app",
        customerId: "alice",
        owner: "alice",
        issuedAt: 1_795_000_000_000,
        entitlements: [.init(id: "pro", productId: "pro", expiresDate: nil, provisional: false)],
        balances: ["gems": 300],
        purchases: [
            .init(
                transactionId: "2000000000000001",
                originalTransactionId: "2000000000000001",
                productId: "pro",
                productType: .nonConsumable,
                quantity: 1,
                purchaseDate: 1_794_000_000_000,
                expiresDate: nil,
                revoked: false,
                confirmed: true
            )
        ]
    )

    @Test func aSignedSnapshotVerifiesWithThePublishedKey() throws {
        let signer = SnapshotSigner(key: key)
        let jws = try signer.sign(snapshot)
        // The key travels as JSON (GET /v1/keys) and is read back by the app.
        let published = try JSONEncoder().encode(SnapshotKeySet(keys: [signer.publicKey]))
        let keys = try JSONDecoder().decode(SnapshotKeySet.self, from: published)
        let verifier = SnapshotVerifier(keys: keys.keys)
        #expect(try verifier.verify(jws, bundleId: "com.example.app", customerId: "alice") == snapshot)
        #expect(snapshot.grants("pro", at: 0) && snapshot.balance("gems") == 300 && snapshot.balance("coins") == 0)
    }

    @Test func anEditedSnapshotIsRejected() throws {
        let jws = try SnapshotSigner(key: key).sign(snapshot)
        let parts = jws.split(separator: ".").map(String.init)
        var richer = snapshot
        richer.balances["gems"] = 1_000_000
        let forgedPayload = Base64.encode(Array(try JSONEncoder().encode(richer)), alphabet: .url)
        let verifier = SnapshotVerifier(keys: [SnapshotPublicKey(key.publicKey)])
        #expect(throws: SnapshotError.badSignature) {
            try verifier.verify([parts[0], forgedPayload, parts[2]].joined(separator: "."))
        }
        // Every single changed character of the signed text breaks it.
        for index in stride(from: 0, to: jws.count, by: 7) where jws[jws.index(jws.startIndex, offsetBy: index)] != "."
        {
            var bytes = Array(jws.utf8)
            bytes[index] = bytes[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            #expect(throws: SnapshotError.self) { try verifier.verify(String(decoding: bytes, as: UTF8.self)) }
        }
    }

    @Test func anotherKeyOrSubjectIsRefused() throws {
        let jws = try SnapshotSigner(key: key).sign(snapshot)
        let other = SnapshotVerifier(keys: [SnapshotPublicKey(P256.Signing.PrivateKey().publicKey)])
        #expect(throws: SnapshotError.unknownKey(SnapshotPublicKey(key.publicKey).kid)) { try other.verify(jws) }
        // The attacker's own key, published under the genuine key's id, is not accepted either.
        var impostor = SnapshotPublicKey(P256.Signing.PrivateKey().publicKey)
        impostor.kid = SnapshotPublicKey(key.publicKey).kid
        #expect(SnapshotVerifier(keys: [impostor]).keyIds.isEmpty)

        let verifier = SnapshotVerifier(keys: [SnapshotPublicKey(key.publicKey)])
        #expect(throws: SnapshotError.wrongSubject("customer alice")) {
            try verifier.verify(jws, bundleId: "com.example.app", customerId: "mallory")
        }
        #expect(throws: SnapshotError.wrongSubject("bundle id com.example.app")) {
            try verifier.verify(jws, bundleId: "com.example.other", customerId: "alice")
        }
        #expect(throws: SnapshotError.self) { try verifier.verify("not.a.jws") }
        #expect(throws: SnapshotError.self) { try verifier.verify("") }
    }

    @Test func expiringEntitlementsEndAtTheirDate() {
        var timed = snapshot
        timed.entitlements = [
            EntitlementSnapshot.Grant(id: "premium", productId: "premium.monthly", expiresDate: 1000, provisional: true)
        ]
        #expect(timed.grants("premium", at: 999) && !timed.grants("premium", at: 1000) && !timed.grants("pro", at: 0))
    }
}
