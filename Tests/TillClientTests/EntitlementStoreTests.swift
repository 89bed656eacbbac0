import Crypto
import Foundation
import Testing
import TillClient
import TillContract
import TillCore
import TillFormats
import TillSnapshot
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

/// The snapshot on disk: believed only with the server's signature, for this app and customer.
@Suite(.sharingTheMachine, .timeLimit(.minutes(10)))
struct EntitlementStoreTests {
    /// The file with its payload changed and the header and signature kept: what a user editing it produces.
    static func edit(_ jws: String, _ change: (inout EntitlementSnapshot) -> Void) throws -> String {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3)
        var snapshot = try JSONDecoder().decode(
            EntitlementSnapshot.self,
            from: Data(try #require(Base64.decode(parts[1], alphabet: .url)))
        )
        change(&snapshot)
        let payload = Base64.encode(Array(try JSONEncoder().encode(snapshot)), alphabet: .url)
        return [parts[0], payload, parts[2]].joined(separator: ".")
    }

    /// A coordinator that bought 100 gems, and its snapshot file.
    static func buyGems(_ fixture: ClientFixture, _ url: String) async throws -> PurchaseCoordinator<
        SimulatorStorefront
    > {
        let coordinator = try fixture.coordinator(url)
        guard case .delivered = try await coordinator.purchase(productId: "gems.100") else {
            throw Killed()
        }
        #expect(await coordinator.balance(of: "gems") == 100)
        return coordinator
    }

    @Test(arguments: TestDatabase.all) func anEditedSnapshotFileIsRejectedAndAFreshOneFetched(_ database: TestDatabase)
        async throws
    {
        try await ClientFixture.run(database: database) { fixture in
            try await fixture.serve { url in
                let coordinator = try await Self.buyGems(fixture, url)
                let file = coordinator.entitlements.fileURL
                let genuine = try String(contentsOf: file, encoding: .utf8)
                let edited = try Self.edit(genuine) {
                    $0.balances["gems"] = 1_000_000
                    $0.entitlements.append(.init(id: "pro", productId: "pro", expiresDate: nil, provisional: false))
                }
                try Data(edited.utf8).write(to: file)

                let store = try EntitlementStore(
                    directory: file.deletingLastPathComponent(),
                    bundleId: ClientFixture.bundleId,
                    customerId: "alice",
                    server: fixture.client(url)
                )
                #expect(await store.load() == .rejected(.badSignature))
                #expect(!FileManager.default.fileExists(atPath: file.path))
                // Nothing of the edited file is believed.
                #expect(await store.balance(of: "gems") == 0)
                #expect(await !store.isEntitled(to: "pro"))
                #expect(try await store.loadOrRefresh().balance("gems") == 100)
                #expect(FileManager.default.fileExists(atPath: file.path))

                // The same at an app's launch: rejected, fetched again, the real balance.
                try Data(edited.utf8).write(to: file)
                let launch = try await fixture.coordinator(url).start()
                #expect(launch.storedSnapshot == .rejected(.badSignature))
                #expect(launch.snapshot?.balance("gems") == 100)
                #expect(launch.snapshot?.grants("pro") == false)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func aSnapshotSignedByAnotherKeyOrForAnotherCustomerIsRejected(
        _ database: TestDatabase
    ) async throws {
        try await ClientFixture.run(database: database) { fixture in
            try await fixture.serve { url in
                let coordinator = try await Self.buyGems(fixture, url)
                let file = coordinator.entitlements.fileURL
                let genuine = try String(contentsOf: file, encoding: .utf8)
                let store = try EntitlementStore(
                    directory: file.deletingLastPathComponent(),
                    bundleId: ClientFixture.bundleId,
                    customerId: "alice",
                    server: fixture.client(url)
                )

                // Signed by someone else's key: the key is unknown.
                let payload = try Self.edit(genuine) { $0.balances["gems"] = 5_000 }.split(separator: ".")[1]
                let snapshot = try JSONDecoder().decode(
                    EntitlementSnapshot.self,
                    from: Data(try #require(Base64.decode(payload, alphabet: .url)))
                )
                let forger = SnapshotSigner(key: P256.Signing.PrivateKey())
                try Data(try forger.sign(snapshot).utf8).write(to: file)
                #expect(await store.load() == .rejected(.unknownKey(forger.publicKey.kid)))

                // Genuine, but bob's: another customer's snapshot does not count for alice.
                let bobs = try await fixture.client(url).snapshot(customerId: "bob").signedSnapshot
                try Data(bobs.utf8).write(to: file)
                guard case .rejected(.wrongSubject) = await store.load() else {
                    Issue.record("bob's snapshot was not rejected for alice")
                    return
                }
                // Garbage is rejected too.
                try Data("not a snapshot".utf8).write(to: file)
                guard case .rejected(.malformed) = await store.load() else {
                    Issue.record("garbage was not rejected")
                    return
                }
                #expect(await store.load() == .missing)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func pinnedKeysVerifyTheSnapshotWithoutTheServer(_ database: TestDatabase)
        async throws
    {
        try await ClientFixture.run(database: database) { fixture in
            var keys: [SnapshotPublicKey] = []
            var directory = URL(fileURLWithPath: "/")
            try await fixture.serve { url in
                let coordinator = try await Self.buyGems(fixture, url)
                keys = try await fixture.client(url).snapshotKeys().keys
                directory = coordinator.entitlements.fileURL.deletingLastPathComponent()
            }
            #expect(!keys.isEmpty)
            // The server is gone: pinned keys still verify the stored snapshot.
            let offline = try EntitlementStore(
                directory: directory,
                bundleId: ClientFixture.bundleId,
                customerId: "alice",
                server: nil,
                pinnedKeys: keys
            )
            guard case .verified(let snapshot) = await offline.load() else {
                Issue.record("the pinned keys did not verify the snapshot")
                return
            }
            #expect(snapshot.balance("gems") == 100)
            // Without pinned keys and without the server there is nothing to trust it with: kept, not believed.
            let unpinned = try EntitlementStore(
                directory: directory,
                bundleId: ClientFixture.bundleId,
                customerId: "alice",
                server: nil
            )
            guard case .unverifiable = await unpinned.load() else {
                Issue.record("a snapshot was believed without a trusted key")
                return
            }
            #expect(await unpinned.balance(of: "gems") == 0)
            // Pinning another key rejects the server's snapshots.
            let other = SnapshotSigner(key: P256.Signing.PrivateKey()).publicKey
            let wrongPin = try EntitlementStore(
                directory: directory,
                bundleId: ClientFixture.bundleId,
                customerId: "alice",
                server: nil,
                pinnedKeys: [other]
            )
            guard case .rejected(.unknownKey) = await wrongPin.load() else {
                Issue.record("a snapshot signed by an unpinned key was believed")
                return
            }
        }
    }

    @Test(arguments: TestDatabase.all) func spendingCreditsIsCountedOncePerRequestAndShownFromTheSnapshot(
        _ database: TestDatabase
    ) async throws {
        try await ClientFixture.run(database: database) { fixture in
            try await fixture.serve { url in
                let coordinator = try await Self.buyGems(fixture, url)
                #expect(try await coordinator.spend(30, of: "gems", requestId: "order-1").balance("gems") == 70)
                #expect(try await coordinator.spend(30, of: "gems", requestId: "order-1").balance("gems") == 70)
                #expect(await coordinator.balance(of: "gems") == 70)
                await #expect {
                    try await coordinator.spend(500, of: "gems", requestId: "order-2")
                } throws: { error in
                    let error = error as? TillClientError
                    return error?.code == "insufficientBalance" && error?.isPermanentRefusal == true
                }
                #expect(await coordinator.balance(of: "gems") == 70)
            }
        }
    }
}
