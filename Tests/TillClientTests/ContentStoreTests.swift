import Foundation
import Testing
import TillClient
import TillCore
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Downloads of server-delivered content: resumed with Range, checked, placed whole.
@Suite(.sharingTheMachine, .timeLimit(.minutes(10)))
struct ContentStoreTests {
    static let manualSHA = ClientFixture.sha256(ClientFixture.manual)

    /// Buys `pro` in the store and has the server record it for alice, without the coordinator.
    static func entitleAlice(_ fixture: ClientFixture, _ client: TillServerClient) async throws {
        let purchase = try await fixture.buy("pro")
        _ = try await client.submit(
            .signedTransaction(try #require(purchase.signedTransaction)),
            customerId: "alice",
            idempotencyKey: "pro-1"
        )
    }

    func contentStore(_ fixture: ClientFixture, _ client: TillServerClient) throws -> ContentStore {
        try ContentStore(
            directory: fixture.directory.appendingPathComponent("content"),
            server: client,
            timeout: 30,
            session: fixture.http
        )
    }

    @Test(arguments: TestDatabase.all) func anInterruptedDownloadResumesWithRangeFromWhereItStopped(
        _ database: TestDatabase
    ) async throws {
        try await ClientFixture.run(database: database) { fixture in
            try await fixture.serve { url in
                let client = fixture.client(url)
                try await Self.entitleAlice(fixture, client)
                let store = try contentStore(fixture, client)

                // The connection drops after a megabyte: the download's task is cancelled mid-file.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        _ = try await store.download(productId: "pro", customerId: "alice") { progress in
                            if progress.received >= 1_000_000 { withUnsafeCurrentTask { $0?.cancel() } }
                        }
                    }
                    await #expect(throws: CancellationError.self) { try await group.next() }
                }
                let partial = await store.partialSize(sha256: Self.manualSHA)
                #expect(partial >= 1_000_000 && partial < 3_000_000)
                #expect(await store.storedFiles(productId: "pro").isEmpty)

                let files = try await store.download(productId: "pro", customerId: "alice")
                let manual = try #require(files.first)
                #expect(manual.resumedFrom == partial)
                #expect(manual.transferred == 3_000_000 - partial)
                #expect(Array(try Data(contentsOf: manual.url)) == ClientFixture.manual)
                #expect(await store.partialSize(sha256: Self.manualSHA) == 0)
                #expect(await store.storedFiles(productId: "pro").map(\.name) == ["manual.pdf"])
            }
        }
    }

    @Test(arguments: TestDatabase.all) func aCorruptPartialFileIsCaughtByTheChecksumAndDownloadedAgain(
        _ database: TestDatabase
    ) async throws {
        try await ClientFixture.run(database: database) { fixture in
            try await fixture.serve { url in
                let client = fixture.client(url)
                try await Self.entitleAlice(fixture, client)
                let store = try contentStore(fixture, client)
                let partial = store.directory.appendingPathComponent("partial/\(Self.manualSHA)")
                try Data(repeating: 0xAB, count: 500_000).write(to: partial)

                await #expect {
                    try await store.download(productId: "pro", customerId: "alice")
                } throws: { ($0 as? TillClientError)?.kind == .checksumMismatch }
                // Nothing wrong was placed, and the bad bytes are gone.
                #expect(await store.storedFiles(productId: "pro").isEmpty)
                #expect(!FileManager.default.fileExists(atPath: partial.path))

                let manual = try #require(try await store.download(productId: "pro", customerId: "alice").first)
                #expect(manual.resumedFrom == 0 && manual.transferred == 3_000_000)
                #expect(Array(try Data(contentsOf: manual.url)) == ClientFixture.manual)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func contentIsDownloadedAgainLaterWhileEntitledAndRefusedOtherwise(
        _ database: TestDatabase
    ) async throws {
        try await ClientFixture.run(database: database) { fixture in
            try await fixture.serve { url in
                let client = fixture.client(url)
                let coordinator = try fixture.coordinator(url)
                guard case .delivered(let delivery) = try await coordinator.purchase(productId: "pro") else {
                    Issue.record("pro was not delivered")
                    return
                }
                #expect(delivery.files.first?.transferred == 3_000_000)
                // Already stored: asking again fetches nothing.
                #expect(try await coordinator.downloadContent(productId: "pro").first?.transferred == 0)
                // The app frees space; later the customer wants it back.
                try await coordinator.content.remove(productId: "pro")
                #expect(await coordinator.content.storedFiles(productId: "pro").isEmpty)
                let again = try #require(try await coordinator.downloadContent(productId: "pro").first)
                #expect(again.transferred == 3_000_000)
                #expect(Array(try Data(contentsOf: again.url)) == ClientFixture.manual)

                // Someone who did not buy it gets the server's refusal, typed.
                let mallory = try contentStore(fixture, client)
                await #expect {
                    try await mallory.download(productId: "pro", customerId: "mallory")
                } throws: { error in
                    let error = error as? TillClientError
                    return error?.status == 403 && error?.code == "notEntitled" && error?.isTemporary == false
                }
            }
        }
    }
}
