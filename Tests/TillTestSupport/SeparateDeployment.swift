import Foundation
import NIOHTTP1

/// `till simulator` and `till serve --mode production`, each a process of its own, wired only by the settings
/// docs/configuration.md gives ("Production against a separately started simulator"), and driven only over
/// HTTP: Till as a user runs it against a simulator started elsewhere.
///
/// The settings are read from that section of the docs, so the docs' example is what these tests run. The
/// simulator gets an app with the usual products, an App Store Server API key and a sandbox tester with a
/// device; the server gets the same app (its shared secret and key) and catalogue through its admin API, and
/// the simulator sends the app's sandbox notifications to the server.
public struct SeparateDeployment: Sendable {
    public static let bundleId = "com.example.till"
    public static let appAppleId: Int64 = 1_234_567_890

    /// The simulator's APIs (admin, StoreKit, Apple's endpoints); its admin API needs no token.
    public let simulator: JSONHTTP
    /// The server's admin API, with the operator token.
    public let admin: JSONHTTP
    /// The server's app API, with the app's key.
    public let app: JSONHTTP
    /// The server's routes that need no key (`/metrics`, `/v1/apple/notifications`).
    public let open: JSONHTTP
    public let serverProcess: TillProcess
    public let simulatorProcess: TillProcess
    /// The shared secret App Store Connect (the simulator) holds for the app now.
    public let sharedSecret: String
    public let accountId: String
    public let deviceId: String
    /// The server's working directory (its trust file and content).
    public let directory: URL
    /// The settings the server was started with (`TILL_…`), as the docs give them.
    public let settings: [String: String]

    /// A purchase the simulator's StoreKit made.
    public struct Payment: Decodable, Sendable {
        public var id: String
        public var state: String
        public var transactionId: String?
        public var originalTransactionId: String?
        public var signedTransaction: String?
        public var transactionReceipt: String?
    }

    /// Starts both, prepares them, runs `body`, and stops both (gracefully, as an operator would) whatever
    /// `body` did. `settings` are more `TILL_…` settings for the server; `database` is the server's.
    ///
    /// With `notifications` false the simulator is given no notification URL and the server's automatic catch-up is
    /// off (`TILL_CATCH_UP_INTERVAL_SECONDS=0`, unless `settings` names it): a test delivers Apple's notifications
    /// itself, when it wants (`deliverNotification`). Catch-up reads the same notifications from Apple's history,
    /// and its run at start sees an app registered in its first moments: it would confirm a purchase whenever the
    /// machine's timing let it, before the submission a test is watching.
    public static func run(
        database: TestDatabase = .sqlite,
        settings extra: [String: String] = [:],
        notifications: Bool = true,
        _ body: (SeparateDeployment) async throws -> Void
    ) async throws {
        try Prerequisite.tillExecutable.require()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("till-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let recipe = try DocumentedDeployment.read()

        let simulatorProcess = try await TillProcess.start(
            ["simulator", "--port", "0", "--database", ":memory:", "--log-level", "warning"]
        )
        do {
            var settings = extra
            if !notifications, settings["TILL_CATCH_UP_INTERVAL_SECONDS"] == nil {
                settings["TILL_CATCH_UP_INTERVAL_SECONDS"] = "0"
            }
            let deployment = try await start(
                simulatorProcess: simulatorProcess,
                recipe: recipe,
                database: database,
                settings: settings,
                notifications: notifications,
                directory: directory
            )
            do {
                try await body(deployment)
            } catch {
                await deployment.serverProcess.stop()
                await simulatorProcess.stop()
                throw DeploymentFailure(error: error, server: deployment.serverProcess.output)
            }
            await deployment.serverProcess.stop()
        } catch {
            await simulatorProcess.stop()
            throw error
        }
        await simulatorProcess.stop()
    }

    private static func start(
        simulatorProcess: TillProcess,
        recipe: DocumentedDeployment,
        database: TestDatabase,
        settings extra: [String: String],
        notifications: Bool,
        directory: URL
    ) async throws -> SeparateDeployment {
        let simulator = JSONHTTP(base: simulatorProcess.base)
        // App Store Connect: the app, its products and API key, a sandbox tester and a device.
        let created = try await expect(
            201,
            simulator.post("/admin/v1/apps", ["bundleId": bundleId, "appAppleId": appAppleId, "name": "Till"])
        )
        let sharedSecret = try field(created, "sharedSecret")
        for product: [String: Any] in [
            ["productId": "gems.100", "type": "consumable", "price": 990, "title": "100 Gems"],
            ["productId": "pro", "type": "nonConsumable", "price": 4990, "title": "Pro"],
            [
                "productId": "premium.monthly", "type": "autoRenewable", "subscriptionGroup": "premium",
                "subscriptionPeriod": "P1M", "price": 990, "title": "Premium",
            ],
            ["productId": "issue.1", "type": "nonRenewing", "price": 2990, "title": "Issue 1"],
        ] {
            _ = try await expect(201, simulator.post("/admin/v1/apps/\(appAppleId)/products", product))
        }
        let key = try await expect(201, simulator.post("/admin/v1/apps/\(appAppleId)/api-keys"))
        let account = try await expect(201, simulator.post("/admin/v1/accounts", ["environment": "Sandbox"]))
        let accountId = try field(account, "id")
        let device = try await expect(
            201,
            simulator.post("/admin/v1/accounts/\(accountId)/devices", ["name": "iPhone"])
        )

        let (serverProcess, settings) = try await startServer(
            beside: simulatorProcess,
            recipe: recipe,
            database: database,
            settings: extra,
            directory: directory
        )
        do {
            let token = try settings["TILL_OPERATOR_TOKEN"].unwrapped("the docs' settings give TILL_OPERATOR_TOKEN")
            let admin = JSONHTTP(base: serverProcess.base, token: token)
            let registered = try await expect(
                201,
                admin.post(
                    "/admin/v1/apps",
                    [
                        "bundleId": bundleId, "appAppleId": appAppleId, "name": "Till", "sharedSecrets": [sharedSecret],
                        "apiKeyId": try field(key, "keyId"), "apiIssuerId": try field(key, "issuerId"),
                        "apiPrivateKey": try field(key, "privateKey"), "acceptSandbox": true,
                    ]
                )
            )
            for (productId, product): (String, [String: Any]) in [
                ("gems.100", ["type": "consumable", "credits": ["gems": 100], "price": 990, "currency": "USD"]),
                ("pro", ["type": "nonConsumable", "entitlements": ["pro"]]),
                (
                    "premium.monthly",
                    ["type": "autoRenewable", "entitlements": ["premium"], "subscriptionGroup": "premium"]
                ),
                ("issue.1", ["type": "nonRenewing", "entitlements": ["issue-1"], "durationSeconds": 86_400]),
            ] {
                _ = try await expect(201, admin.send(.PUT, "/admin/v1/apps/\(bundleId)/products/\(productId)", product))
            }
            if notifications {
                // Apple's sandbox notifications for the app go to the server.
                _ = try await expect(
                    200,
                    simulator.send(
                        .PATCH,
                        "/admin/v1/apps/\(appAppleId)",
                        ["notificationUrlSandbox": serverProcess.base + "/v1/apple/notifications"]
                    )
                )
            }
            return SeparateDeployment(
                simulator: simulator,
                admin: admin,
                app: JSONHTTP(base: serverProcess.base, token: try field(registered, "appKey")),
                open: JSONHTTP(base: serverProcess.base),
                serverProcess: serverProcess,
                simulatorProcess: simulatorProcess,
                sharedSecret: sharedSecret,
                accountId: accountId,
                deviceId: try field(device, "id"),
                directory: directory,
                settings: settings
            )
        } catch {
            await serverProcess.stop()
            throw DeploymentFailure(error: error, server: serverProcess.output)
        }
    }

    /// What the server trusts, fetched as the docs fetch it, then the server started with the docs' settings.
    private static func startServer(
        beside simulatorProcess: TillProcess,
        recipe: DocumentedDeployment,
        database: TestDatabase,
        settings extra: [String: String],
        directory: URL
    ) async throws -> (TillProcess, [String: String]) {
        let simulator = JSONHTTP(base: simulatorProcess.base)
        for (path, file) in recipe.downloads {
            let certificate = try await expect(200, simulator.get(path))
            try Data(certificate.body).write(to: directory.appendingPathComponent(file))
        }
        var settings = recipe.settings(simulator: simulator.base)
        settings["TILL_DATABASE_URL"] = try await database.freshURL(prefix: "till_e2e")
        settings["TILL_CONTENT_DIRECTORY"] = directory.appendingPathComponent("content").path
        settings["TILL_LOG_LEVEL"] = "warning"
        settings.merge(extra) { $1 }
        let server = try await TillProcess.start(["serve", "--port", "0"], environment: settings, directory: directory)
        return (server, settings)
    }

    /// The two processes started as the docs say and nothing set up in them: `body` gets the simulator's and the
    /// server's addresses and the working directory, as a reader has them after the docs' first block.
    public static func runUnprepared(
        database: TestDatabase = .sqlite,
        _ body: (_ simulator: String, _ server: String, _ directory: URL) async throws -> Void
    ) async throws {
        try Prerequisite.tillExecutable.require()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("till-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let simulatorProcess = try await TillProcess.start(
            ["simulator", "--port", "0", "--database", ":memory:", "--log-level", "warning"]
        )
        do {
            let (server, _) = try await startServer(
                beside: simulatorProcess,
                recipe: try DocumentedDeployment.read(),
                database: database,
                settings: [:],
                directory: directory
            )
            do {
                try await body(simulatorProcess.base, server.base, directory)
            } catch {
                await server.stop()
                throw DeploymentFailure(error: error, server: server.output)
            }
            await server.stop()
        } catch {
            await simulatorProcess.stop()
            throw error
        }
        await simulatorProcess.stop()
    }

    // MARK: What an app and an operator do

    /// Buys `productId` on the tester's device through the simulator's StoreKit (sandbox).
    public func buy(_ productId: String, quantity: Int? = nil) async throws -> Payment {
        var body: [String: Any] = ["deviceId": deviceId, "bundleId": Self.bundleId, "productId": productId]
        if let quantity { body["quantity"] = quantity }
        return try await Self.expect(200, simulator.post("/storekit/sandbox/payments", body)).decode(Payment.self)
    }

    /// The device's app receipt, base64.
    public func receipt() async throws -> String {
        let reply = try await Self.expect(
            200,
            simulator.get("/storekit/sandbox/devices/\(deviceId)/receipt?bundleId=\(Self.bundleId)")
        )
        return try Self.field(reply, "receiptData")
    }

    /// `POST /v1/receipts` for `customerId` with one format (`receipt`, `transactionReceipt`,
    /// `signedTransaction`), waiting up to `wait` seconds for Apple's answer.
    public func submit(
        _ customerId: String,
        _ format: String,
        _ payload: String,
        wait: Int? = nil,
        idempotencyKey: String? = nil
    ) async throws -> JSONReply {
        var body: [String: Any] = ["customerId": customerId, format: payload]
        if let idempotencyKey { body["idempotencyKey"] = idempotencyKey }
        return try await app.post("/v1/receipts" + (wait.map { "?wait=\($0)" } ?? ""), body)
    }

    /// `GET /v1/customers/{id}`.
    public func customer(_ id: String) async throws -> [String: Any] {
        try await Self.expect(200, app.get("/v1/customers/\(id)")).object
    }

    /// Polls `GET /v1/submissions/{id}` until it leaves the queue (confirmed, rejected, dead-lettered) or
    /// `timeout` passes; answers the last state seen.
    public func settled(_ submissionId: String, timeout: Duration = .seconds(60)) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let submission = try await Self.expect(200, app.get("/v1/submissions/\(submissionId)")).object
            let state = submission["state"] as? String
            if state != "pending" && state != "retrying" || ContinuousClock.now >= deadline { return submission }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Waits until `condition` holds, asking every 100 ms, for up to `timeout`; throws if it never does.
    public func eventually(
        _ what: String,
        timeout: Duration = .seconds(60),
        _ condition: () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestSupportFailure("\(what) did not happen within \(timeout)")
    }

    /// Delivers to the server, as Apple would, the sandbox notification of `type` about `transactionId` that the
    /// simulator signed (for a deployment started without notifications); answers the server's reply.
    @discardableResult
    public func deliverNotification(_ type: String, transactionId: String) async throws -> JSONReply {
        let log = try await Self.expect(
            200,
            simulator.get("/admin/v1/apps/\(Self.appAppleId)/notifications?environment=sandbox")
        ).array
        guard
            let entry = log.first(where: {
                $0["notificationType"] as? String == type && $0["transactionId"] as? String == transactionId
            }),
            let signedPayload = entry["signedPayload"] as? String
        else { throw TestSupportFailure("the simulator signed no \(type) about \(transactionId): \(log)") }
        return try await open.post("/v1/apple/notifications", ["signedPayload": signedPayload])
    }

    /// Adds a fault to the simulator (`ENVIRONMENT:ENDPOINT:EFFECT`, docs/simulator.md).
    public func fault(_ spec: String) async throws {
        try await Self.expect(201, simulator.post("/admin/v1/faults", ["spec": spec]))
    }

    /// The sum of a Prometheus counter's samples whose labels include every one of `labels` (`name="value"`).
    public func counter(_ name: String, _ labels: String...) async throws -> Double {
        try await metrics().split(separator: "\n").filter { line in
            line.hasPrefix(name + "{") && labels.allSatisfy { line.contains($0) }
        }.compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +)
    }

    /// The server's `/metrics` text.
    public func metrics() async throws -> String {
        try await Self.expect(200, open.get("/metrics")).text
    }

    // MARK: Helpers

    /// The reply, when it has `status`; otherwise a failure showing it.
    @discardableResult
    public static func expect(_ status: Int, _ reply: JSONReply) throws -> JSONReply {
        guard reply.status == status else { throw TestSupportFailure("expected \(status), got \(reply)") }
        return reply
    }

    static func field(_ reply: JSONReply, _ name: String) throws -> String {
        if let text = reply.object[name] as? String { return text }
        throw TestSupportFailure("no \(name) in \(reply)")
    }
}

/// A failure inside a deployment, with what the server printed.
public struct DeploymentFailure: Error, CustomStringConvertible {
    public var error: any Error
    public var server: String
    public var description: String { "\(error)\n--- till serve printed:\n\(server.suffix(4000))" }

    public init(error: any Error, server: String) {
        self.error = error
        self.server = server
    }
}
