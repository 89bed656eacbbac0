import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SQLKit
import Testing
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillLedger
import TillSnapshot
import TillStorage
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// Signed entitlement snapshots, as an app fetches and checks them: `GET /v1/keys` and
/// `GET /v1/customers/{customer}/snapshot`.
@Suite(.sharingTheMachine)
struct SnapshotTests {
    typealias Reply = HTTPReply

    func call(
        _ client: some TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ path: String,
        _ body: String? = nil,
        token: String?
    ) async throws -> Reply {
        try await client.call(method, path, json: body, token: token)
    }

    /// A verifier built the way an app builds it: from the key set the server publishes.
    func verifier(_ client: some TestClientProtocol, token: String) async throws -> SnapshotVerifier {
        let keys = try await call(client, .get, "/v1/keys", token: token)
        #expect(keys.status == 200 && keys.headers[.cacheControl] == "public, max-age=3600")
        return SnapshotVerifier(keys: try keys.decode(SnapshotKeySet.self).keys)
    }

    func submit(_ client: some TestClientProtocol, _ fixture: ServerFixture, customer: String, jws: String)
        async throws -> Reply
    {
        let body = String(
            decoding: try JSONEncoder().encode(SubmissionRequest(customerId: customer, signedTransaction: jws)),
            as: UTF8.self
        )
        return try await call(client, .post, "/v1/receipts?wait=60", body, token: fixture.app.appKey)
    }

    @Test(arguments: TestDatabase.all) func aCustomerGetsASnapshotThePublishedKeysVerify(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                let key = fixture.app.appKey
                let pro = try await fixture.buy("pro")
                let gems = try await fixture.buy("gems.100", quantity: 3)
                _ = try await submit(client, fixture, customer: "alice", jws: pro.signedTransaction!)
                let submitted = try await submit(client, fixture, customer: "alice", jws: gems.signedTransaction!)
                #expect(submitted.status == 200)

                let verifier = try await verifier(client, token: key)
                #expect(verifier.keyIds == [fixture.server.snapshots.signer.publicKey.kid])
                let reply = try await call(client, .get, "/v1/customers/alice/snapshot", token: key)
                #expect(reply.status == 200 && reply.headers[.cacheControl] == "no-store")
                let answer = try reply.decode(SignedSnapshot.self)
                let snapshot = try verifier.verify(
                    answer.signedSnapshot,
                    bundleId: ServerFixture.bundleId,
                    customerId: "alice"
                )
                #expect(snapshot == answer.snapshot)
                #expect(snapshot.owner == "alice")
                #expect(abs(snapshot.issuedAt - Int64(Date().timeIntervalSince1970 * 1000)) < 60_000)
                #expect(
                    snapshot.entitlements == [.init(id: "pro", productId: "pro", expiresDate: nil, provisional: false)]
                )
                #expect(snapshot.grants("pro", at: snapshot.issuedAt) && !snapshot.grants("premium", at: 0))
                #expect(snapshot.balances == ["gems": 300] && snapshot.balance("gems") == 300)
                #expect(Set(snapshot.purchases.map(\.productId)) == ["pro", "gems.100"])
                let consumable = try #require(snapshot.purchases.first { $0.productId == "gems.100" })
                #expect(consumable.productType == .consumable && consumable.quantity == 3)
                #expect(consumable.transactionId == gems.transactionId)
                #expect(snapshot.purchases.allSatisfy { $0.confirmed && !$0.revoked })

                // The submission's answer carries the same evidence, as of when it left.
                let fromReceipt = try verifier.verify(
                    try #require(submitted.object["signedSnapshot"] as? String),
                    bundleId: ServerFixture.bundleId,
                    customerId: "alice"
                )
                #expect(fromReceipt.balances == ["gems": 300] && fromReceipt.entitlements.map(\.id) == ["pro"])

                // Someone who bought nothing gets a genuine, empty snapshot; path ids are percent-decoded.
                let nobody = try await call(client, .get, "/v1/customers/bob%20smith/snapshot", token: key)
                let empty = try verifier.verify(
                    try nobody.decode(SignedSnapshot.self).signedSnapshot,
                    bundleId: ServerFixture.bundleId,
                    customerId: "bob smith"
                )
                #expect(
                    empty.entitlements.isEmpty && empty.balances.additionalProperties.isEmpty && empty.purchases.isEmpty
                )
                // Alice's snapshot is no good to Bob's app session.
                #expect(throws: SnapshotError.wrongSubject("customer alice")) {
                    try verifier.verify(
                        answer.signedSnapshot,
                        bundleId: ServerFixture.bundleId,
                        customerId: "bob smith"
                    )
                }
            }
        }
    }

    @Test(arguments: TestDatabase.all) func aDebitChangesTheSnapshotAndAnEditedOneIsRefused(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                let key = fixture.app.appKey
                let gems = try await fixture.buy("gems.100", quantity: 2)
                _ = try await submit(client, fixture, customer: "carol", jws: gems.signedTransaction!)
                let verifier = try await verifier(client, token: key)
                let before = try await call(client, .get, "/v1/customers/carol/snapshot", token: key)
                    .decode(SignedSnapshot.self)
                #expect(before.snapshot.balances == ["gems": 200])

                let debit = #"{"credit":"gems","amount":150,"requestId":"spend-1"}"#
                #expect(try await call(client, .post, "/v1/customers/carol/debits", debit, token: key).status == 200)
                let after = try await call(client, .get, "/v1/customers/carol/snapshot", token: key)
                    .decode(SignedSnapshot.self)
                let spent = try verifier.verify(
                    after.signedSnapshot,
                    bundleId: ServerFixture.bundleId,
                    customerId: "carol"
                )
                #expect(spent.balances == ["gems": 50] && spent.issuedAt >= before.snapshot.issuedAt)
                #expect(after.signedSnapshot != before.signedSnapshot)

                // An app that writes the old balance back into its file is caught.
                let parts = after.signedSnapshot.split(separator: ".").map(String.init)
                var richer = spent
                richer.balances["gems"] = 200
                let encoder = JSONEncoder()
                encoder.outputFormatting = .sortedKeys
                let forged = [parts[0], Base64.encode(Array(try encoder.encode(richer)), alphabet: .url), parts[2]]
                #expect(throws: SnapshotError.badSignature) { try verifier.verify(forged.joined(separator: ".")) }
                // So is one that grafts the richer, genuine payload of before onto the newer signature.
                let oldPayload = before.signedSnapshot.split(separator: ".")[1]
                #expect(throws: SnapshotError.badSignature) {
                    try verifier.verify([parts[0], String(oldPayload), parts[2]].joined(separator: "."))
                }
                // And one signed with a key of its own, even under the server's key id.
                var impostor = SnapshotSigner(key: P256.Signing.PrivateKey()).publicKey
                impostor.kid = fixture.server.snapshots.signer.publicKey.kid
                #expect(SnapshotVerifier(keys: [impostor]).keyIds.isEmpty)
                let selfSigned = try SnapshotSigner(key: P256.Signing.PrivateKey()).sign(richer)
                #expect(throws: SnapshotError.self) { try verifier.verify(selfSigned) }
            }
        }
    }

    @Test(arguments: TestDatabase.all) func aGuestsSnapshotNamesTheAccountThatOwnsItsPurchases(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                let key = fixture.app.appKey
                let pro = try await fixture.buy("pro")
                _ = try await submit(client, fixture, customer: "device-1", jws: pro.signedTransaction!)
                let linked = try await call(
                    client,
                    .post,
                    "/v1/customers/dave/aliases",
                    #"{"customerId":"device-1"}"#,
                    token: key
                )
                #expect(linked.status == 200)
                let verifier = try await verifier(client, token: key)
                let reply = try await call(client, .get, "/v1/customers/device-1/snapshot", token: key)
                let snapshot = try verifier.verify(
                    try reply.decode(SignedSnapshot.self).signedSnapshot,
                    bundleId: ServerFixture.bundleId,
                    customerId: "device-1"
                )
                #expect(snapshot.owner == "dave" && snapshot.entitlements.map(\.id) == ["pro"])

                // A restore answers with the snapshot of the customer in the path.
                let restore = try await call(
                    client,
                    .post,
                    "/v1/customers/dave/restore",
                    String(
                        decoding: try JSONEncoder().encode(["signedTransaction": pro.signedTransaction!]),
                        as: UTF8.self
                    ),
                    token: key
                )
                #expect(restore.status == 200)
                let restored = try verifier.verify(
                    try #require(restore.object["signedSnapshot"] as? String),
                    bundleId: ServerFixture.bundleId,
                    customerId: "dave"
                )
                #expect(restored.owner == "dave" && restored.entitlements.map(\.id) == ["pro"])
            }
        }
    }

    @Test(arguments: TestDatabase.all) func bothRoutesNeedTheAppKey(_ database: TestDatabase) async throws {
        try await ServerFixture.run(database: database) { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in
                for path in ["/v1/keys", "/v1/customers/alice/snapshot"] {
                    var statuses: [Int] = []
                    // No key, a wrong one, the operator token (not an app key), the app's key.
                    for token in [nil, "tk_wrong", "operator", fixture.app.appKey] {
                        statuses.append(try await call(client, .get, path, token: token).status)
                    }
                    #expect(statuses == [401, 401, 401, 200], "\(path)")
                }
            }
        }
    }

    /// A rotation in two steps: the next key is published before it signs, and the previous one stays published
    /// after, so that a snapshot a device holds verifies against the key set at every moment.
    @Test func aRotationPublishesTheNextKeyBeforeAndThePreviousKeyAfter() async throws {
        let previous = P256.Signing.PrivateKey()
        let next = P256.Signing.PrivateKey()
        let (old, new) = (SnapshotPublicKey(previous.publicKey).kid, SnapshotPublicKey(next.publicKey).kid)

        var before = ServerConfiguration(operatorToken: "operator", snapshotSigningKey: previous)
        before.snapshotPublishedKeys = [next.publicKey]
        let first = try await PurchaseServer.open(before)
        #expect(first.snapshots.keys.keys.map(\.kid) == [old, new])  // the signing key first
        let held = try await first.snapshots.snapshot(bundleId: ServerFixture.bundleId, customerId: "erin")
        try await first.shutdown()

        var after = ServerConfiguration(operatorToken: "operator", snapshotSigningKey: next)
        after.snapshotPublishedKeys = [previous.publicKey, next.publicKey]  // the signing key is listed once
        let second = try await PurchaseServer.open(after)
        #expect(second.snapshots.keys.keys.map(\.kid) == [new, old])
        let verifier = SnapshotVerifier(keys: second.snapshots.keys.keys)
        #expect(try verifier.verify(held.signedSnapshot) == held.snapshot)  // signed before the switch
        let fresh = try await second.snapshots.snapshot(bundleId: ServerFixture.bundleId, customerId: "erin")
        let onlyNext = SnapshotVerifier(keys: [SnapshotPublicKey(next.publicKey)])
        #expect(try onlyNext.verify(fresh.signedSnapshot).owner == "erin")  // signed with the next key
        // Once the previous key is no longer published, what it signed is refused.
        #expect(throws: SnapshotError.unknownKey(old)) {
            try onlyNext.verify(held.signedSnapshot)
        }
        try await second.shutdown()
    }

    /// `snapshot.published-key-files` takes public keys, or private keys whose public half is published.
    @Test func publishedKeyFilesArePublicOrPrivatePEMAndBadOnesAreRefused() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("till-keys-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = P256.Signing.PrivateKey()
        func write(_ name: String, _ text: String) throws -> String {
            let path = directory.appendingPathComponent(name).path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
        let publicFile = try write("next.pub.pem", key.publicKey.pemRepresentation)
        let privateFile = try write("previous.pem", key.pemRepresentation)
        #expect(try SnapshotKeyFiles.publishedKey(at: publicFile).rawRepresentation == key.publicKey.rawRepresentation)
        #expect(try SnapshotKeyFiles.publishedKey(at: privateFile).rawRepresentation == key.publicKey.rawRepresentation)
        #expect(try SnapshotKeyFiles.signingKey(at: privateFile).rawRepresentation == key.rawRepresentation)
        let garbage = try write("garbage.pem", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
        #expect { try SnapshotKeyFiles.publishedKey(at: garbage) } throws: {
            ($0 as? SettingsRefusal)?.reason == .invalidSnapshotKey
        }
        // A public key cannot sign.
        #expect { try SnapshotKeyFiles.signingKey(at: publicFile) } throws: {
            ($0 as? SettingsRefusal)?.reason == .invalidSnapshotKey
        }
        #expect { try SnapshotKeyFiles.publishedKey(at: directory.appendingPathComponent("none").path) } throws: {
            ($0 as? SettingsRefusal)?.reason == .snapshotKeyUnreadable
        }
    }

    /// Every process of a deployment, and every restart, signs with the one key the first process stored, so
    /// a snapshot on a device keeps verifying whichever process the app talks to.
    @Test(arguments: TestDatabase.all)
    func everyProcessOfADeploymentSignsWithTheSameKey(_ engine: TestDatabase) async throws {
        let database = try await engine.fresh(prefix: "till_srv")
        let configuration = ServerConfiguration(database: database, operatorToken: "operator")
        let servers: [PurchaseServer]
        if engine == .postgres {
            // Several processes starting at once on one database: one of them makes the key, all use it.
            servers = try await withThrowingTaskGroup(of: PurchaseServer.self) { group in
                for _ in 0..<3 { group.addTask { try await PurchaseServer.open(configuration) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        } else {
            // An SQLite file has one server at a time: the same key survives a restart.
            let first = try await PurchaseServer.open(configuration)
            let kid = first.snapshots.keys.keys.map(\.kid)
            try await first.shutdown()
            let second = try await PurchaseServer.open(configuration)
            #expect(second.snapshots.keys.keys.map(\.kid) == kid)
            servers = [second]
        }
        let kids = Set(servers.flatMap { $0.snapshots.keys.keys.map(\.kid) })
        #expect(kids.count == 1)
        let stored = try await servers[0].database.sql.raw(
            "SELECT value FROM srv_settings WHERE name = \(bind: SettingStore.snapshotKeySetting)"
        ).first()?.decode(column: "value", as: String.self)
        let storedKey = try P256.Signing.PrivateKey(pemRepresentation: try #require(stored))
        #expect(kids == [SnapshotPublicKey(storedKey.publicKey).kid])
        // What one signs, the keys another publishes verify.
        let signed = try await servers[0].snapshots.snapshot(bundleId: ServerFixture.bundleId, customerId: "erin")
        for server in servers {
            #expect(
                try SnapshotVerifier(keys: server.snapshots.keys.keys).verify(signed.signedSnapshot) == signed.snapshot
            )
        }
        for server in servers { try await server.shutdown() }

        // A configured key wins over the stored one.
        let own = P256.Signing.PrivateKey()
        var configured = configuration
        configured.snapshotSigningKey = own
        let server = try await PurchaseServer.open(configured)
        #expect(server.snapshots.keys.keys.map(\.kid) == [SnapshotPublicKey(own.publicKey).kid])
        try await server.shutdown()
    }
}
