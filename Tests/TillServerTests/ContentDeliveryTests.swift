import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import TillAppStore
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

/// Content delivery as an operator, an app and a device use it: uploads, signed URLs, ranged downloads, refusals.
@Suite(.sharingTheMachine)
struct ContentDeliveryTests {
    typealias Reply = HTTPReply

    static let bundle = ServerFixture.bundleId
    static let admin = "/admin/v1/apps/\(ServerFixture.bundleId)/products"

    /// 300 000 bytes: more than two of the 128 KiB chunks the server streams in.
    static let manual: [UInt8] = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }

    static func sha256(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    func call(
        _ client: any TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ path: String,
        bytes: [UInt8]? = nil,
        json: String? = nil,
        token: String? = nil,
        headers: HTTPFields = [:]
    ) async throws -> Reply {
        try await client.call(method, path, json: json, bytes: bytes, token: token, headers: headers)
    }

    func upload(
        _ client: any TestClientProtocol,
        product: String = "pro",
        name: String = "manual.pdf",
        _ bytes: [UInt8] = manual,
        contentType: String? = "application/pdf"
    ) async throws -> Reply {
        var headers: HTTPFields = [:]
        if let contentType { headers[.contentType] = contentType }
        return try await call(
            client,
            .put,
            "\(Self.admin)/\(product)/content/\(name)",
            bytes: bytes,
            token: "operator",
            headers: headers
        )
    }

    /// Buys `pro` in the simulator and has the server confirm it for `customer`.
    func buyPro(_ fixture: ServerFixture, _ client: any TestClientProtocol, customer: String) async throws {
        let purchase = try await fixture.buy("pro")
        let body = try JSONSerialization.data(withJSONObject: [
            "customerId": customer, "signedTransaction": purchase.signedTransaction!,
        ])
        let reply = try await call(
            client,
            .post,
            "/v1/receipts?wait=60",
            json: String(decoding: body, as: UTF8.self),
            token: fixture.app.appKey
        )
        #expect(reply.status == 200)
    }

    func requestDownloads(
        _ fixture: ServerFixture,
        _ client: any TestClientProtocol,
        customer: String,
        json: String = #"{"productId":"pro"}"#
    ) async throws -> Reply {
        try await call(client, .post, "/v1/customers/\(customer)/downloads", json: json, token: fixture.app.appKey)
    }

    func firstURL(_ reply: Reply) throws -> String {
        let downloads = try #require(reply.object["downloads"] as? [[String: Any]])
        return try #require(downloads.first?["url"] as? String)
    }

    /// A fixture whose content lives in a directory of its own, served in-process (`.router`) or on a port (`.live`).
    func withContent(
        _ mode: TestingSetup = .router,
        database: TestDatabase = .sqlite,
        configure: @escaping (inout ServerConfiguration) -> Void = { _ in },
        _ body: @Sendable (ServerFixture, any TestClientProtocol, String) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("till-content-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await ServerFixture.run(
            database: database,
            configure: {
                $0.contentDirectory = directory
                configure(&$0)
            }
        ) { fixture in
            try await Application(router: buildServerRouter(fixture.server)).test(mode) { client in
                try await body(fixture, client, directory)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func uploadsAreListedByHashChangeTheMasterListAndShareBlobs(
        _ database: TestDatabase
    ) async throws {
        try await withContent(database: database) { fixture, client, directory in
            let before = try await call(client, .get, "/v1/products", token: fixture.app.appKey)
            let etag = try #require(before.headers[.eTag])

            let created = try await upload(client)
            #expect(created.status == 201)
            #expect(created.object["sha256"] as? String == Self.sha256(Self.manual))
            #expect(created.object["size"] as? Int == Self.manual.count)
            let listed = try await call(client, .get, "\(Self.admin)/pro/content", token: "operator")
            let files = try #require(listed.object["items"] as? [[String: Any]])
            #expect(files.map { $0["name"] as? String } == ["manual.pdf"])
            #expect(files.first?["sha256"] as? String == Self.sha256(Self.manual))
            #expect(files.first?["contentType"] as? String == "application/pdf")
            #expect(
                FileManager.default.contents(atPath: "\(directory)/\(Self.sha256(Self.manual))") == Data(Self.manual)
            )

            // The master list shows the file, under a new ETag.
            let after = try await call(
                client,
                .get,
                "/v1/products",
                token: fixture.app.appKey,
                headers: [.ifNoneMatch: etag]
            )
            #expect(after.status == 200 && after.headers[.eTag] != etag)
            let pro = (after.object["products"] as? [[String: Any]])?.first { $0["productId"] as? String == "pro" }
            #expect((pro?["content"] as? [[String: Any]])?.first?["name"] as? String == "manual.pdf")

            // Replacing by name keeps one entry; the old bytes go once nothing lists them.
            let second: [UInt8] = Array("second edition".utf8)
            let replaced = try await upload(client, second, contentType: nil)
            #expect(replaced.status == 200 && replaced.object["contentType"] as? String == "application/octet-stream")
            let relisted = try await call(client, .get, "\(Self.admin)/pro/content", token: "operator")
            #expect(
                (relisted.object["items"] as? [[String: Any]])?.map { $0["sha256"] as? String } == [Self.sha256(second)]
            )
            #expect(!FileManager.default.fileExists(atPath: "\(directory)/\(Self.sha256(Self.manual))"))

            // The same bytes on two products are stored once and kept until the last product lets go.
            #expect(try await upload(client, product: "premium.monthly", name: "same.txt", second).status == 201)
            #expect(
                try await call(client, .delete, "\(Self.admin)/pro/content/manual.pdf", token: "operator").status == 204
            )
            #expect(FileManager.default.fileExists(atPath: "\(directory)/\(Self.sha256(second))"))
            #expect(
                try await call(client, .delete, "\(Self.admin)/premium.monthly/content/same.txt", token: "operator")
                    .status == 204
            )
            #expect(!FileManager.default.fileExists(atPath: "\(directory)/\(Self.sha256(second))"))
            let emptied = try await call(client, .get, "\(Self.admin)/pro/content", token: "operator")
            #expect(emptied.status == 200 && (emptied.object["items"] as? [Any])?.isEmpty == true)

            let gone = try await call(client, .delete, "\(Self.admin)/pro/content/manual.pdf", token: "operator")
            #expect(gone.status == 404 && gone.code == "contentNotFound")
            #expect(try await upload(client, product: "nope").code == "productNotFound")
            // An unknown app is said as such, not as its product (each of the admin's content routes).
            let otherApp = "/admin/v1/apps/com.example.nope/products/pro/content"
            for (method, path) in [(HTTPRequest.Method.get, otherApp), (.delete, otherApp + "/manual.pdf")] {
                let unknown = try await call(client, method, path, token: "operator")
                #expect(unknown.status == 404 && unknown.code == "appNotFound", "\(unknown)")
            }
            let unknownApp = try await call(client, .put, otherApp + "/x.bin", bytes: [1, 2, 3], token: "operator")
            #expect(unknownApp.status == 404 && unknownApp.code == "appNotFound", "\(unknownApp)")
            #expect(try await upload(client, product: "gems.100").code == "consumableContent")
            let anonymous = try await call(client, .put, "\(Self.admin)/pro/content/x.bin", bytes: [1, 2, 3])
            #expect(anonymous.status == 401)
            // Nothing half-written is left behind by the refusals.
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory)
            #expect(leftovers.isEmpty)
        }
    }

    @Test(arguments: TestDatabase.all) func badNamesAndOversizedUploadsAreRefused(_ database: TestDatabase) async throws
    {
        try await withContent(database: database, configure: { $0.content.maxUploadBytes = 1024 }) {
            fixture,
            client,
            directory in
            for name in [
                "a%2Fb.pdf", "%2E%2E", "a..b", "line%0Abreak", "quote%22.pdf", String(repeating: "n", count: 201),
                // 101 characters as a person reads them, each an e and a combining accent: 202 code points.
                String(repeating: "e%CC%81", count: 101),
            ] {
                let reply = try await upload(client, name: name, [1])
                #expect(reply.status == 400 && reply.code == "invalidName", "\(name)")
            }
            let declared = try await upload(
                client,
                name: "big.bin",
                [UInt8](repeating: 7, count: 1025)
            )
            #expect(declared.status == 413 && declared.code == "bodyTooLarge")
            // Streamed without a Content-Length (the test clients always send one), the limit holds on the bytes.
            let chunks = AsyncStream<ByteBuffer> { continuation in
                continuation.yield(ByteBuffer(repeating: 7, count: 600))
                continuation.yield(ByteBuffer(repeating: 7, count: 600))
                continuation.finish()
            }
            await #expect(throws: ContentRefusal.self) {
                try await fixture.server.content.putContent(
                    bundleId: Self.bundle,
                    productId: "pro",
                    name: "big.bin",
                    contentType: nil,
                    declaredLength: nil,
                    body: chunks
                )
            }
            let listed = try await call(client, .get, "\(Self.admin)/pro/content", token: "operator")
            #expect((listed.object["items"] as? [Any])?.isEmpty == true)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
            let atLimit = try await upload(client, name: "My%20Book%20%C3%A9.bin", [UInt8](repeating: 7, count: 1024))
            #expect(atLimit.status == 201 && atLimit.object["name"] as? String == "My Book é.bin")
        }
    }

    @Test(arguments: TestDatabase.all) func downloadURLsAreSignedOnlyForEntitledCustomers(_ database: TestDatabase)
        async throws
    {
        try await withContent(database: database, configure: { $0.content.urlLifetime = .seconds(120) }) {
            fixture,
            client,
            _ in
            #expect(try await upload(client).status == 201)
            #expect(
                try await upload(client, name: "readme.txt", Array("hi".utf8), contentType: "text/plain").status == 201
            )

            let refused = try await requestDownloads(fixture, client, customer: "alice")
            #expect(refused.status == 403 && refused.code == "notEntitled")
            #expect(refused.message?.contains("pro") == true)
            #expect(
                try await call(client, .post, "/v1/customers/alice/downloads", json: #"{"productId":"pro"}"#).status
                    == 401
            )

            try await buyPro(fixture, client, customer: "alice")
            let all = try await requestDownloads(fixture, client, customer: "alice")
            #expect(all.status == 200)
            let downloads = try #require(all.object["downloads"] as? [[String: Any]])
            #expect(downloads.map { $0["name"] as? String } == ["manual.pdf", "readme.txt"])
            let first = try #require(downloads.first)
            #expect(first["sha256"] as? String == Self.sha256(Self.manual))
            #expect(first["size"] as? Int == Self.manual.count && first["contentType"] as? String == "application/pdf")
            let url = try #require(first["url"] as? String)
            #expect(
                url.hasPrefix(
                    "/v1/content/\(Self.bundle)/\(Self.sha256(Self.manual))?name=manual.pdf&customer=alice&expires="
                )
            )
            let expiresAt = try #require(first["expiresAt"] as? Int)
            let expected = Int(Date().timeIntervalSince1970 * 1000) + 120_000
            #expect(abs(expiresAt - expected) < 5_000)

            let one = try await requestDownloads(
                fixture,
                client,
                customer: "alice",
                json: #"{"productId":"pro","name":"readme.txt"}"#
            )
            #expect((one.object["downloads"] as? [[String: Any]])?.map { $0["name"] as? String } == ["readme.txt"])
            let unknownFile = try await requestDownloads(
                fixture,
                client,
                customer: "alice",
                json: #"{"productId":"pro","name":"nope.pdf"}"#
            )
            #expect(unknownFile.status == 404 && unknownFile.code == "contentNotFound")
            let unknownProduct = try await requestDownloads(
                fixture,
                client,
                customer: "alice",
                json: #"{"productId":"nope"}"#
            )
            #expect(unknownProduct.status == 404 && unknownProduct.code == "productNotFound")
            // Another customer does not share alice's purchase.
            #expect(try await requestDownloads(fixture, client, customer: "bob").code == "notEntitled")
        }
    }
}
