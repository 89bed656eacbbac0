import AsyncHTTPClient
import Crypto
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import SQLKit
import ServiceLifecycle
import TillAppStore
import TillCatalogue
import TillClient
import TillContent
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillSnapshot
import TillStorage
import TillTestSupport

@testable import TillServer
@testable import TillSimulator

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A simulator and a verification server on loopback ports, with an app whose products cover the five types,
/// and a sandbox account with a device: what an app using TillClient talks to.
///
/// The simulator listens for the whole test; the server's HTTP listener runs inside ``serve(port:_:)``, so a test
/// can take it down and bring it back on the same port.
struct ClientFixture: Sendable {
    let simulator: Simulator
    let server: PurchaseServer
    let app: ServerApp
    let account: SimAccount
    let device: SimDevice
    let simulatorURL: String
    /// A scratch directory removed after the test.
    let directory: URL
    let http: URLSession

    static let bundleId = "com.example.till"
    /// Bytes of the `pro` manual: large enough to arrive in many chunks, so a download can be interrupted.
    static let manual: [UInt8] = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }
    static let issue: [UInt8] = Array("Issue 1: the whole magazine.\n".utf8)

    /// Runs `body` with a simulator, a server on `database` (SQLite in memory, or a fresh PostgreSQL database)
    /// and its worker.
    static func run(database engine: TestDatabase = .sqlite, _ body: (ClientFixture) async throws -> Void)
        async throws
    {
        let database = engine == .sqlite ? .sqliteInMemory : try await engine.fresh(prefix: "till_client")
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("till-client-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let simulator = try await Simulator.open(SimulatorConfiguration(keys: .shared))
        let simApp = try await simulator.appStoreConnect.createApp(
            AppInput(appAppleId: 1_234_567_890, bundleId: bundleId, sharedSecret: "s3cret")
        )
        for input in [
            ProductInput(productId: "gems.100", type: .consumable, price: 990, title: "100 Gems"),
            ProductInput(productId: "pro", type: .nonConsumable, price: 4990, title: "Pro"),
            ProductInput(
                productId: "premium.monthly",
                type: .autoRenewable,
                subscriptionGroup: "premium",
                subscriptionPeriod: .oneMonth,
                price: 990,
                title: "Premium"
            ),
            ProductInput(productId: "issue.1", type: .nonRenewing, price: 2990, title: "Issue 1"),
            ProductInput(productId: "news.free", type: .freeSubscription, price: 0, title: "Free news"),
        ] {
            _ = try await simulator.appStoreConnect.createProduct(appAppleId: simApp.appAppleId, input)
        }
        let key = try await simulator.appStoreConnect.createAPIKey(appAppleId: simApp.appAppleId)
        let account = try await simulator.appStoreConnect.createAccount(AccountInput(environment: "Sandbox"))
        let device = try await simulator.appStoreConnect.createDevice(
            accountId: account.id,
            DeviceInput(name: "iPhone")
        )
        let http = TillHTTP.makeSession()

        do {
            try await withServices({ buildSimulatorApplication(simulator, port: 0, onServerRunning: $0) }) { port in
                let server = try await PurchaseServer.open(
                    ServerConfiguration(
                        database: database,
                        operatorToken: "operator-token-0123456789",
                        apple: .simulator("http://127.0.0.1:\(port)"),
                        sandboxJWSRoots: [simulator.signer.jwsAuthority.root],
                        sandboxReceiptRoots: [simulator.signer.receiptAuthority.root],
                        sandboxReceiptIntermediates: [simulator.signer.receiptAuthority.intermediate],
                        confirmation: .init(backoffBase: .milliseconds(50), backoffCap: .seconds(1)),
                        contentDirectory: directory.appendingPathComponent("server-content").path
                    )
                )
                let app = try await server.catalogue.createApp(
                    ServerAppInput(
                        bundleId: bundleId,
                        appAppleId: simApp.appAppleId,
                        sharedSecrets: ["s3cret"],
                        apiKeyId: key.keyId,
                        apiIssuerId: key.issuerId,
                        apiPrivateKey: key.privateKey
                    )
                )
                let catalogue: [(String, CatalogProductInput)] = [
                    (
                        "gems.100",
                        CatalogProductInput(type: .consumable, credits: ["gems": 100], price: 990, currency: "USD")
                    ),
                    ("pro", CatalogProductInput(type: .nonConsumable, entitlements: ["pro"])),
                    (
                        "premium.monthly",
                        CatalogProductInput(
                            type: .autoRenewable,
                            entitlements: ["premium"],
                            subscriptionGroup: "premium"
                        )
                    ),
                    (
                        "issue.1",
                        CatalogProductInput(type: .nonRenewing, entitlements: ["issue-1"], durationSeconds: 86_400)
                    ),
                    ("news.free", CatalogProductInput(type: .freeSubscription, entitlements: ["news"])),
                ]
                for (productId, input) in catalogue {
                    _ = try await server.catalogue.putProduct(bundleId: bundleId, productId: productId, input)
                }
                let fixture = ClientFixture(
                    simulator: simulator,
                    server: server,
                    app: app,
                    account: account,
                    device: device,
                    simulatorURL: "http://127.0.0.1:\(port)",
                    directory: directory,
                    http: http
                )
                try await fixture.upload(productId: "pro", name: "manual.pdf", Self.manual)
                try await fixture.upload(productId: "issue.1", name: "issue-1.txt", Self.issue)
                do {
                    try await body(fixture)
                } catch {
                    try? await server.shutdown()
                    throw error
                }
                try await server.shutdown()
            }
        } catch {
            http.invalidateAndCancel()
            try? await simulator.shutdown()
            throw error
        }
        http.finishTasksAndInvalidate()
        try await simulator.shutdown()
    }

    /// Runs the server's HTTP API (and its confirmation worker) on `port` (0: a free one) for `body`.
    func serve(port: Int = 0, _ body: (String) async throws -> Void) async throws {
        try await withServices({ buildServerApplication(server, port: port, onServerRunning: $0) }) { port in
            try await body("http://127.0.0.1:\(port)")
        }
    }

    func upload(productId: String, name: String, _ bytes: [UInt8]) async throws {
        let chunks = AsyncStream<ByteBuffer> { continuation in
            for start in stride(from: 0, to: bytes.count, by: 65_536) {
                continuation.yield(ByteBuffer(bytes: bytes[start..<min(start + 65_536, bytes.count)]))
            }
            continuation.finish()
        }
        _ = try await server.content.putContent(
            bundleId: Self.bundleId,
            productId: productId,
            name: name,
            contentType: "application/octet-stream",
            declaredLength: Int64(bytes.count),
            body: chunks
        )
    }

    // MARK: The app's side

    func storefront(
        device: SimDevice? = nil,
        pollInterval: TimeInterval = 0.1,
        sheet: @escaping @Sendable (Payment) async -> SimulatorStorefront.SheetAction = { _ in .confirm }
    ) -> SimulatorStorefront {
        SimulatorStorefront(
            baseURL: simulatorURL,
            deviceId: (device ?? self.device).id,
            bundleId: Self.bundleId,
            timeout: 30,
            pollInterval: pollInterval,
            session: http,
            paymentSheet: sheet
        )
    }

    func client(_ url: String, timeout: TimeInterval = 30) -> TillServerClient {
        TillServerClient(baseURL: url, appKey: app.appKey, timeout: timeout, session: http)
    }

    /// An app's coordinator keeping its files in `folder` of the scratch directory: the same folder is the
    /// same installation across "launches".
    func coordinator(
        _ url: String,
        customer: String = "alice",
        folder: String = "device-1",
        storefront: SimulatorStorefront? = nil,
        timeout: TimeInterval = 60
    ) throws -> PurchaseCoordinator<SimulatorStorefront> {
        try coordinator(
            url,
            customer: customer,
            folder: folder,
            store: storefront ?? self.storefront(),
            timeout: timeout
        )
    }

    func coordinator<S: TillStorefront>(
        _ url: String,
        customer: String = "alice",
        folder: String = "device-1",
        store: S,
        timeout: TimeInterval = 60,
        finishing: PurchaseCoordinator<S>.Finishing = .byTill,
        pinnedKeys: [SnapshotPublicKey] = []
    ) throws -> PurchaseCoordinator<S> {
        let client = client(url, timeout: timeout)
        let root = directory.appendingPathComponent(folder, isDirectory: true)
        return PurchaseCoordinator(
            storefront: store,
            server: client,
            customerId: customer,
            outbox: try Outbox(
                directory: root.appendingPathComponent("outbox"),
                server: client,
                backoff: Backoff(base: 0.1, cap: 1, jitter: 0)
            ),
            entitlements: try EntitlementStore(
                directory: root.appendingPathComponent("entitlements"),
                bundleId: Self.bundleId,
                customerId: customer,
                server: client,
                pinnedKeys: pinnedKeys
            ),
            content: try ContentStore(
                directory: root.appendingPathComponent("content"),
                server: client,
                timeout: timeout,
                session: http
            ),
            appTransactions: try AppTransactionRecorder(
                directory: root.appendingPathComponent("app-transaction"),
                server: client,
                backoff: Backoff(base: 0.1, cap: 1, jitter: 0)
            ),
            finishing: finishing
        )
    }

    /// Buys `productId` on the device's store directly (no coordinator): the purchased transaction.
    func buy(_ productId: String, device: SimDevice? = nil) async throws -> StoreTransaction {
        let result = try await storefront(device: device).purchase(Payment(productId: productId))
        guard case .success(.verified(let transaction)) = result else {
            throw TillClientError(.invalidResponse, message: "\(productId) was not purchased: \(result)")
        }
        return transaction
    }

    /// The device's unfinished queue entries, as the simulator holds them.
    func unfinished(device: SimDevice? = nil) async throws -> [QueueTransaction] {
        try await simulator.payments.queue(
            deviceId: (device ?? self.device).id,
            bundleId: Self.bundleId,
            environment: .sandbox
        )
    }

    func customer(_ id: String) async throws -> CustomerView {
        try await server.customers.customer(bundleId: Self.bundleId, customerId: id)
    }

    /// A loopback URL where nothing listens: a server that is down.
    static func deadURL() async throws -> String {
        let socket = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let port = socket.localAddress?.port ?? 1
        try await socket.close()
        return "http://127.0.0.1:\(port)"
    }
}

extension ClientFixture {
    /// How many submissions the server holds that carry `transactionId`, in any state.
    /// How many submissions carry a transaction, in whatever state: one query, so that a submission the worker
    /// confirms meanwhile is counted once (a query per state counted it twice, or not at all).
    func submissions(containing transactionId: String) async throws -> Int {
        let rows = try await server.database.sql.select().column("transaction_ids").from("srv_submissions").all()
        return try rows.filter { row in
            let ids = try JSONDecoder().decode(
                [String].self,
                from: Data(try row.decode(column: "transaction_ids", as: String.self).utf8)
            )
            return ids.contains(transactionId)
        }.count
    }
}

extension ClientFixture {
    static func sha256(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }
}
