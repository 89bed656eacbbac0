import AsyncHTTPClient
import Foundation
import NIOHTTP1
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
            simulator = try Self.after("simulator    ", in: text)
            appKey = try Self.after("app key ", in: text)
            deviceId = try Self.after("sandbox device ", in: text)
        }

        /// The word after `label` in `text`: up to a space or a comma, or up to `end` when given.
        static func after(_ label: String, in text: String, until end: Character? = nil) throws -> String {
            guard let range = text.range(of: label) else { throw TestSupportFailure("no \(label) in: \(text)") }
            let rest = text[range.upperBound...]
            if let end { return String(rest.prefix { $0 != end }) }
            return String(rest.prefix { !$0.isWhitespace && $0 != "," })
        }
    }

    /// A refund made in the simulator reaches the server as Apple's notification at once: pro is revoked within
    /// seconds although catch-up is off (`catch-up.interval-seconds` 0), so nothing but the notification can tell it.
    /// The same server then opens the console its banner names (one process start for both: they are slow).
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
            try await consoleOpens(serve)
        } catch {
            await serve.stop()
            throw TestSupportFailure("\(error)\n--- till serve printed:\n\(serve.output.suffix(4000))")
        }
        #expect(await serve.stop() == 0)
    }

    func refundRevokes(_ serve: TillProcess) async throws {
        try await waitUntil { serve.output.contains("sandbox device") && serve.output.contains("Notifications") }
        #expect(
            serve.output.contains(
                "App Store Server Notifications (sandbox and production) → \(serve.base)/v1/apple/notifications"
            )
        )
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
        let submitted = try await app.post(
            "/v1/receipts?wait=30",
            ["customerId": "alice", "signedTransaction": signed]
        )
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

    /// The banner names the console, and a newcomer who opens it is sent to sign in, signs in with the operator
    /// token the banner prints, and sees the overview.
    func consoleOpens(_ serve: TillProcess) async throws {
        let printed = try #require(
            serve.output.split(separator: "\n").first { $0.contains("console  ") },
            "the banner names no console"
        )
        let url = try #require(printed.split(separator: " ").dropFirst().first.map(String.init))
        #expect(url == serve.base + "/console", "\(printed)")
        let token = try Banner.after("(Authorization: Bearer ", in: serve.output, until: ")")
        // Redirects are read, not followed: the answers themselves are what is checked.
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: .init(redirectConfiguration: .disallow)
        )
        do {
            try await signIn(JSONHTTP(base: serve.base, client: client), token: token)
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    func signIn(_ console: JSONHTTP, token: String) async throws {

        let opened = try await console.get("/console")
        #expect(opened.status == 303 && opened.headers["Location"].first == "/console/overview", "\(opened)")
        let unsigned = try await console.get("/console/overview")
        #expect(unsigned.status == 303, "\(unsigned)")
        #expect(unsigned.headers["Location"].first?.hasPrefix("/console/sign-in") == true, "\(unsigned.headers)")
        let form = try await console.get("/console/sign-in")
        #expect(form.status == 200, "\(form)")
        // In steps: `.map(String.init)` over the optional chain took the type checker 2.2 s.
        let cookie = try #require(form.headers["Set-Cookie"].first, "\(form.headers)")
        let pairing = String(cookie.prefix { $0 != ";" })
        let csrf = try Banner.after(#"name="csrf" value=""#, in: form.text, until: "\"")
        let signedIn = try await console.send(
            .POST,
            "/console/sign-in",
            "csrf=\(csrf)&token=\(token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? token)",
            headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Cookie", pairing)]
        )
        #expect(signedIn.status == 303, "\(signedIn)")
        let session = try #require(
            signedIn.headers["Set-Cookie"].first { $0.hasPrefix("till_console=") }?.split(separator: ";").first
        )
        let overview = try await console.send(.GET, "/console/overview", headers: [("Cookie", String(session))])
        #expect(overview.status == 200, "\(overview)")
        #expect(overview.text.contains("Sign out"), "\(overview.text.prefix(400))")
    }
}
