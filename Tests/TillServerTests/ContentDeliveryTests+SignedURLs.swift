import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillContent
@testable import TillServer
@testable import TillSimulator

extension ContentDeliveryTests {
    @Test(arguments: TestDatabase.all) func aSignedURLServesTheFileWithRangesAndValidatorsWithoutTheAppKey(
        _ database: TestDatabase
    ) async throws {
        try await withContent(.live, database: database) { fixture, client, _ in
            #expect(try await upload(client).status == 201)
            try await buyPro(fixture, client, customer: "alice")
            let url = try firstURL(try await requestDownloads(fixture, client, customer: "alice"))
            let size = Self.manual.count
            let etag = "\"\(Self.sha256(Self.manual))\""

            let whole = try await call(client, .get, url)
            #expect(whole.status == 200 && whole.body == Self.manual)
            #expect(whole.headers[.eTag] == etag && whole.headers[.acceptRanges] == "bytes")
            #expect(whole.headers[.contentLength] == "\(size)" && whole.headers[.contentType] == "application/pdf")
            #expect(whole.headers[.contentDisposition] == #"attachment; filename="manual.pdf""#)

            // Resuming after a broken transfer, across the server's 128 KiB read chunks.
            let resumed = try await call(client, .get, url, headers: [.range: "bytes=131000-"])
            #expect(resumed.status == 206 && resumed.body == Array(Self.manual[131_000...]))
            #expect(resumed.headers[.contentRange] == "bytes 131000-\(size - 1)/\(size)")
            #expect(resumed.headers[.contentLength] == "\(size - 131_000)")
            let middle = try await call(client, .get, url, headers: [.range: "bytes=100-199"])
            #expect(middle.status == 206 && middle.body == Array(Self.manual[100...199]))
            #expect(middle.headers[.contentRange] == "bytes 100-199/\(size)")
            let tail = try await call(client, .get, url, headers: [.range: "bytes=-10"])
            #expect(tail.status == 206 && tail.body == Array(Self.manual.suffix(10)))

            let beyond = try await call(client, .get, url, headers: [.range: "bytes=\(size)-"])
            #expect(beyond.status == 416 && beyond.headers[.contentRange] == "bytes */\(size)")
            #expect(beyond.code == "rangeNotSatisfiable")

            let cached = try await call(client, .get, url, headers: [.ifNoneMatch: etag])
            #expect(cached.status == 304 && cached.body.isEmpty && cached.headers[.eTag] == etag)
            // A range against another version of the file is answered with the whole current one.
            let stale = try await call(client, .get, url, headers: [.range: "bytes=0-9", .ifRange: "\"old\""])
            #expect(stale.status == 200 && stale.body.count == size)
            let current = try await call(client, .get, url, headers: [.range: "bytes=0-9", .ifRange: etag])
            #expect(current.status == 206 && current.body == Array(Self.manual[0...9]))

            let head = try await call(client, .head, url)
            #expect(head.status == 200 && head.body.isEmpty && head.headers[.contentLength] == "\(size)")
        }
    }

    @Test(arguments: TestDatabase.all) func tamperedAndExpiredURLsAreRefused(_ database: TestDatabase) async throws {
        try await withContent(database: database) { fixture, client, _ in
            #expect(try await upload(client).status == 201)
            try await buyPro(fixture, client, customer: "alice")
            let url = try firstURL(try await requestDownloads(fixture, client, customer: "alice"))
            #expect(try await call(client, .get, url).status == 200)

            let signature = try #require(url.range(of: "signature=")).upperBound
            let flipped = url[signature] == "0" ? "1" : "0"
            var tampered = url
            tampered.replaceSubrange(signature...signature, with: flipped)
            let expires = try #require(url.firstMatch(of: /expires=(\d+)/)?.1)
            for forged in [
                tampered,
                url.replacingOccurrences(of: "customer=alice", with: "customer=bob"),
                url.replacingOccurrences(of: "name=manual.pdf", with: "name=other.pdf"),
                url.replacingOccurrences(of: "expires=\(expires)", with: "expires=\(Int(expires)! + 3600)"),
                String(url[..<url.range(of: "&signature=")!.lowerBound]),
            ] {
                let reply = try await call(client, .get, forged)
                #expect(reply.status == 403 && reply.code == "invalidSignature", "\(forged)")
            }

            // Genuinely signed by this server, but its time is up.
            let past = fixture.server.content.downloadSigner.url(
                for: DownloadLink(
                    bundleId: Self.bundle,
                    sha256: Self.sha256(Self.manual),
                    customerId: "alice",
                    name: "manual.pdf",
                    expires: Int64(Date().timeIntervalSince1970) - 1
                )
            )
            let expired = try await call(client, .get, past)
            #expect(expired.status == 403 && expired.code == "urlExpired")
        }
    }

    @Test(arguments: TestDatabase.all) func aRefundRevokesDownloadsAlreadyHandedOut(_ database: TestDatabase)
        async throws
    {
        try await withContent(database: database) { fixture, client, _ in
            #expect(try await upload(client).status == 201)
            try await buyPro(fixture, client, customer: "alice")
            let url = try firstURL(try await requestDownloads(fixture, client, customer: "alice"))
            #expect(try await call(client, .get, url).status == 200)

            // Taken back by the operator, through the ledger.
            let purchases = try await PurchaseStore(database: fixture.server.database).transactions(
                bundleId: Self.bundle,
                customerId: "alice",
                on: fixture.server.database.sql
            )
            for purchase in purchases {
                try await fixture.server.ledger.revoke(
                    bundleId: Self.bundle,
                    customerId: "alice",
                    transactionId: purchase.transactionId,
                    environment: purchase.environment,
                    note: "a test takes it back",
                    catalogue: [:]
                )
            }
            let revoked = try await call(client, .get, url)
            #expect(revoked.status == 403 && revoked.code == "notEntitled")
            #expect(try await requestDownloads(fixture, client, customer: "alice").code == "notEntitled")
        }
    }

    @Test(arguments: TestDatabase.all) func aFileTakenOffItsProductIsNoLongerServed(_ database: TestDatabase)
        async throws
    {
        try await withContent(database: database) { fixture, client, _ in
            #expect(try await upload(client).status == 201)
            try await buyPro(fixture, client, customer: "alice")
            let url = try firstURL(try await requestDownloads(fixture, client, customer: "alice"))
            #expect(
                try await call(client, .delete, "\(Self.admin)/pro/content/manual.pdf", token: "operator").status == 204
            )
            let reply = try await call(client, .get, url)
            #expect(reply.status == 404 && reply.code == "contentNotFound")
        }
    }

    @Test(arguments: TestDatabase.all)
    func theServerSecretIsMadeOnceAndSharedThroughTheDatabase(engine: TestDatabase) async throws {
        let database = try await engine.fresh(prefix: "till_secret")
        defer {
            if case .sqlite(let path) = database {
                for suffix in ["", "-wal", "-shm", ".lock"] {
                    try? FileManager.default.removeItem(atPath: path + suffix)
                }
            }
        }
        let configuration = ServerConfiguration(database: database, operatorToken: "operator")
        if case .postgres = database {
            // Two processes starting together on one database agree on one secret (an SQLite file has one).
            async let opening = PurchaseServer.open(configuration)
            let second = try await PurchaseServer.open(configuration)
            let first = try await opening
            #expect(first.configuration.serverSecret == second.configuration.serverSecret)
            try await first.shutdown()
            try await second.shutdown()
        }
        let first = try await PurchaseServer.open(configuration)
        let firstSecret = first.configuration.serverSecret
        try await first.shutdown()
        #expect(firstSecret.count == 64)
        // A restart finds the same secret, so URLs handed out before it still work.
        let restarted = try await PurchaseServer.open(configuration)
        #expect(restarted.configuration.serverSecret == firstSecret)
        try await restarted.shutdown()

        var configured = configuration
        configured.serverSecret = Array("a configured secret, 16+ chars".utf8)
        let explicit = try await PurchaseServer.open(configured)
        #expect(explicit.configuration.serverSecret == configured.serverSecret)
        try await explicit.shutdown()
    }

    @Test func contentSettingsComeFromTheEnvironmentAndAShortSecretIsRefused() async throws {
        let defaults = try await ServerSettings.load(flags: [:], environment: [:], file: nil)
        #expect(defaults.content == ContentSettings() && defaults.serverSecret == nil)
        #expect(defaults.content.maxUploadBytes == 512 * 1024 * 1024 && defaults.content.urlLifetime == .seconds(900))
        let set = try await ServerSettings.load(
            flags: [:],
            environment: [
                "TILL_CONTENT_MAX_UPLOAD_BYTES": "1048576", "TILL_CONTENT_URL_LIFETIME_SECONDS": "60",
                "TILL_SERVER_SECRET": "sixteen-chars-ok",
            ],
            file: nil
        )
        #expect(set.content == ContentSettings(maxUploadBytes: 1_048_576, urlLifetime: .seconds(60)))
        #expect(set.serverSecret == "sixteen-chars-ok")
        await #expect(throws: SettingsRefusal.self) {
            try await ServerSettings.load(flags: [:], environment: ["TILL_SERVER_SECRET": "short"], file: nil)
        }
    }

    @Test(arguments: [
        ("bytes=0-0", DownloadPlan.partial(0...0)),
        ("bytes=5-", .partial(5...9)),
        ("bytes=-3", .partial(7...9)),
        ("bytes=-30", .partial(0...9)),
        ("bytes=2-100", .partial(2...9)),
        ("bytes=10-", .unsatisfiable),
        ("bytes=-0", .unsatisfiable),
        ("bytes=0-1,4-5", .whole),
        ("bytes=5-2", .whole),
        ("items=0-1", .whole),
        ("bytes=x-", .whole),
    ])
    func rangesAreResolvedAgainstTheFileSize(header: String, plan: DownloadPlan) {
        #expect(DownloadPlan.plan(ifNoneMatch: [], range: header, ifRange: nil, etag: "\"e\"", size: 10) == plan)
    }

    @Test func validatorsComeBeforeRanges() {
        #expect(
            DownloadPlan.plan(ifNoneMatch: [#"W/"e""#], range: "bytes=0-1", ifRange: nil, etag: #""e""#, size: 10)
                == .notModified
        )
        #expect(
            DownloadPlan.plan(ifNoneMatch: [#""x", "e""#], range: nil, ifRange: nil, etag: #""e""#, size: 10)
                == .notModified
        )
        #expect(DownloadPlan.plan(ifNoneMatch: [#""x""#], range: nil, ifRange: nil, etag: #""e""#, size: 10) == .whole)
        #expect(
            DownloadPlan.plan(ifNoneMatch: [], range: "bytes=-1", ifRange: nil, etag: #""e""#, size: 0)
                == .unsatisfiable
        )
    }

    @Test func contentOfAProductWithoutEntitlementsFollowsItsPurchase() {
        let product = CatalogProduct(
            bundleId: Self.bundle,
            productId: "map.pack",
            type: .nonConsumable,
            title: "Maps",
            entitlements: [],
            credits: [:],
            content: [],
            subscriptionGroup: nil,
            durationSeconds: nil,
            price: nil,
            currency: nil,
            position: 0,
            createdAt: 0,
            updatedAt: 0
        )
        func customer(revoked: Int64?) -> CustomerView {
            CustomerView(
                customerId: "c",
                entitlements: [],
                balances: [:],
                purchases: [
                    PurchaseView(
                        transactionId: "1",
                        originalTransactionId: "1",
                        productId: "map.pack",
                        productType: .nonConsumable,
                        environment: "Sandbox",
                        quantity: 1,
                        purchaseDate: 0,
                        expiresDate: nil,
                        revocationDate: revoked,
                        revocationReason: nil,
                        confirmed: true
                    )
                ],
                subscriptions: []
            )
        }
        #expect(ContentAccess.decide(product, for: customer(revoked: nil)) == .granted)
        #expect(ContentAccess.decide(product, for: customer(revoked: 5)) != .granted)
        var consumable = product
        consumable.type = .consumable
        #expect(ContentAccess.decide(consumable, for: customer(revoked: nil)) != .granted)
    }
}
