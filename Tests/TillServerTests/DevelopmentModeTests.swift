import Foundation
import Testing
import TillTestSupport

/// `till serve` as a newcomer starts it, with no settings: the simulator in the same process, and its notifications
/// going to the server as a developer sets them in App Store Connect.
@Suite(.sharingTheMachine)
struct DevelopmentModeTests {
    /// What the banner tells a newcomer, read back.
    struct Banner {
        var simulator: String
        var appKey: String
        var deviceId: String

        init(_ text: String) throws {
            func after(_ label: String) throws -> String {
                guard let range = text.range(of: label) else { throw TestSupportFailure("no \(label) in: \(text)") }
                return String(text[range.upperBound...].prefix { !$0.isWhitespace && $0 != "," })
            }
            simulator = try after("simulator    ")
            appKey = try after("app key ")
            deviceId = try after("sandbox device ")
        }
    }

    /// A refund made in the simulator reaches the server as Apple's notification at once: pro is revoked within
    /// seconds although catch-up is off (`catch-up.interval-seconds` 0), so nothing but the notification can tell it.
    @Test func aRefundInTheSimulatorRevokesOnTheServerAtOnce() async throws {
        try Prerequisite.tillExecutable.require()
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("till-development-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try await TillProcess.start(
            ["serve", "--port", "0", "--simulator-port", "0"],
            environment: ["TILL_CATCH_UP_INTERVAL_SECONDS": "0"],
            directory: directory
        )
        do {
            try await refundRevokes(serve)
        } catch {
            await serve.stop()
            throw TestSupportFailure("\(error)\n--- till serve printed:\n\(serve.output.suffix(4000))")
        }
        #expect(await serve.stop() == 0)
    }

    func refundRevokes(_ serve: TillProcess) async throws {
        try await waitUntil { serve.output.contains("sandbox device") && serve.output.contains("Notifications") }
        #expect(serve.output.contains("App Store Server Notifications (sandbox and production) → \(serve.base)/v1/apple/notifications"))
        let banner = try Banner(serve.output)
        let simulator = JSONHTTP(base: banner.simulator)
        let app = JSONHTTP(base: serve.base, token: banner.appKey)

        let apps = try await simulator.get("/admin/v1/apps").array
        let demo = try #require(apps.first { $0["bundleId"] as? String == "com.example.till" })
        #expect(demo["notificationUrlSandbox"] as? String == serve.base + "/v1/apple/notifications")
        #expect(demo["notificationUrlProduction"] as? String == serve.base + "/v1/apple/notifications")

        let payment = try await simulator.post(
            "/storekit/sandbox/payments",
            ["deviceId": banner.deviceId, "bundleId": "com.example.till", "productId": "pro"]
        )
        let signed = try #require(payment.object["signedTransaction"] as? String, "\(payment)")
        let transactionId = try #require(payment.object["transactionId"] as? String, "\(payment)")
        let submitted = try await app.post("/v1/receipts?wait=30", ["customerId": "alice", "signedTransaction": signed])
        #expect(submitted.status == 200, "\(submitted)")
        func entitlements() async throws -> [String] {
            let customer = try await app.get("/v1/customers/alice").object
            return (customer["entitlements"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        }
        #expect(try await entitlements() == ["pro"])

        let refund = try await simulator.post("/admin/v1/transactions/\(transactionId)/refund", ["reason": 1])
        #expect(refund.status == 200, "\(refund)")
        try await waitUntil { try await entitlements().isEmpty }
    }
}
