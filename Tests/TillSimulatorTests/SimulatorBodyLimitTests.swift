import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import TillHTTPKit
import TillTestSupport

@testable import TillSimulator

/// The simulator's limits on request bodies (docs/fuzzing.md, "Resource bounds"), each at its edge: the largest body
/// is read and judged for what it is, one byte more is refused as the route refuses it, before anything is decoded.
@Suite(.sharingTheMachine)
struct SimulatorBodyLimitTests {
    /// `prefix` followed by `x`s and `suffix`, exactly `size` bytes.
    static func body(size: Int, prefix: String = #"{"pad":""#, suffix: String = #""}"#) -> String {
        prefix + String(repeating: "x", count: size - prefix.utf8.count - suffix.utf8.count) + suffix
    }

    @Test func eachRouteReadsAtMostItsLimit() async throws {
        let fixture = try await SimulatorFixture.make()
        let app = Application(router: buildSimulatorRouter(fixture.simulator))
        try await app.test(.router) { client in
            // StoreKit and admin bodies: 64 KiB, then 413 bodyTooLarge.
            for path in ["/storekit/sandbox/payments", "/admin/v1/accounts"] {
                let over = try await client.call(.post, path, json: Self.body(size: BodyLimit.json + 1))
                #expect(over.status == 413 && over.code == "bodyTooLarge", "\(path): \(over.status) \(over.code ?? "")")
                let at = try await client.call(.post, path, json: Self.body(size: BodyLimit.json))
                #expect(at.status != 413 && at.status < 500, "\(path): \(at.status) \(at.code ?? "")")
            }
            // verifyReceipt: 2 MiB, as Apple answers it (HTTP 200): over it the request is unreadable (21000); at it
            // the receipt is read, and is not one (21002).
            let verifyLimit = 2 * 1024 * 1024
            func status(_ size: Int) async throws -> Int? {
                let text = Self.body(size: size, prefix: #"{"receipt-data":""#).replacingOccurrences(of: "x", with: "A")
                let reply = try await client.call(.post, "/sandbox/verifyReceipt", json: text)
                #expect(reply.status == 200)
                return reply.object["status"] as? Int
            }
            #expect(try await status(verifyLimit + 1) == 21000)
            #expect(try await status(verifyLimit) == 21002)
            // The Server API: 5 MiB (Retention Messaging's images), then Apple's 400 before the token is looked at; at
            // the limit the call goes on to its authentication (none here: 401).
            let image = "/sandbox/inApps/v1/messaging/image/limit"
            let overImage = try await client.call(.put, image, bytes: [UInt8](repeating: 0, count: ServerAPICall.bodyLimit + 1))
            #expect(overImage.status == 400, "\(overImage.status)")
            let atImage = try await client.call(.put, image, bytes: [UInt8](repeating: 0, count: ServerAPICall.bodyLimit))
            #expect(atImage.status == 401, "\(atImage.status)")
        }
    }
}
