import AsyncHTTPClient
import Foundation
import JWTKit
import NIOCore
import NIOHTTP1
import Synchronization
import TillCatalogue
import TillCore
import TillFormats
import TillHTTPKit
import TillLedger

/// Calls Apple (or the simulator): verifyReceipt and the App Store Server API (Get Transaction Info for the queue,
/// the notification and transaction histories for catching up, Send Consumption Information for Apple's consumption
/// requests).
extension AppleClient {
    /// A client with a connection pool of its own, for a worker or a run that shuts it down when it ends: with the
    /// server's tracing on, each call to Apple is a span of the task's (the process's shared client keeps the tracer
    /// it was made with, whoever's); `connectionsPerHost` calls at once to one host (AsyncHTTPClient's default: 8).
    init(endpoints: AppleEndpoints, timeout: Duration, metrics: any AppStoreMetrics, connectionsPerHost: Int? = nil) {
        var configuration = HTTPClient.Configuration()
        var pools = 1
        if let connectionsPerHost {
            pools = max(1, (connectionsPerHost + Self.connectionsPerPool - 1) / Self.connectionsPerPool)
            configuration.connectionPool = .init(
                idleTimeout: .seconds(60),
                concurrentHTTP1ConnectionsPerHostSoftLimit: (connectionsPerHost + pools - 1) / pools
            )
        }
        configuration.tracing.tracer = Traces.tracer
        self.init(
            pools: (0..<pools).map { _ in HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            },
            endpoints: endpoints,
            timeout: timeout,
            metrics: metrics
        )
    }

    /// Closes the client's connections (one made by `init(endpoints:timeout:metrics:connectionsPerHost:)`).
    func shutdown() async {
        for pool in pools { try? await pool.shutdown() }
    }

    /// The most connections one of the client's pools holds to a host. AsyncHTTPClient's pool keeps a host's
    /// connections in one array and walks or copies it on every lease, release and new connection; with 4,096
    /// confirmations waiting seconds for Apple at once, that was about 6% of the CPU of confirming them (perf over
    /// `till bench submissions --rate 1000`). A larger concurrency is split over several pools, each call taking the
    /// next in turn.
    static let connectionsPerPool = 256
}

package struct AppleClient: Sendable {
    /// The client's connection pools (see `connectionsPerPool`): one, unless its concurrency is large.
    let pools: [HTTPClient]
    private let turn = Turn()
    let endpoints: AppleEndpoints
    let timeout: Duration
    /// Told how long each call took (`AppStoreMetrics.appleCallTook`): the console's latency per endpoint.
    let metrics: any AppStoreMetrics

    /// What came back from one call.
    package enum Answer: Sendable {
        /// An HTTP answer: status and body, and how long Apple asked to wait before the next request, when it did
        /// (`Retry-After`).
        case http(status: Int, body: [UInt8], retryAfter: Duration? = nil)
        /// No answer: the cause (`timeout`, `connection reset`, …).
        case transport(String)
        /// Not sent: this server's settings for the call are unusable (no URL, a key that does not load).
        case misconfigured(String)
    }

    /// A client over `http`, a pool its caller shuts down.
    package init(http: HTTPClient, endpoints: AppleEndpoints, timeout: Duration, metrics: any AppStoreMetrics) {
        self.init(pools: [http], endpoints: endpoints, timeout: timeout, metrics: metrics)
    }

    private init(pools: [HTTPClient], endpoints: AppleEndpoints, timeout: Duration, metrics: any AppStoreMetrics) {
        precondition(!pools.isEmpty)
        self.pools = pools
        self.endpoints = endpoints
        self.timeout = timeout
        self.metrics = metrics
    }

    /// Which pool the next call takes.
    private final class Turn: Sendable {
        private let count = Atomic<Int>(0)
        func next() -> Int { count.wrappingAdd(1, ordering: .relaxed).oldValue & Int.max }
    }

    private var timeAmount: TimeAmount {
        .nanoseconds(
            Int64(timeout.components.seconds) * 1_000_000_000 + Int64(timeout.components.attoseconds / 1_000_000_000)
        )
    }

    /// verifyReceipt in `environment`, with a body from `verifyReceiptBody(receiptData:password:)`: made once for an
    /// attempt, whichever environments it asks.
    func verifyReceipt(_ environment: AppStoreEnvironment, body: ByteBuffer) async -> Answer {
        guard let url = endpoints.verifyReceipt[environment] else {
            return .misconfigured("no verifyReceipt URL for \(environment)")
        }
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(body)
        return await execute(request, endpoint: .verifyReceipt, environment: environment)
    }

    /// `{"receipt-data":…,"password":…}`. Receipts are kilobytes of base64 and shared secrets are hex, neither of
    /// which JSON escapes: they are written as they are (escaping them character by character was a visible
    /// share of a confirmation's cost); anything else goes through the encoder.
    static func verifyReceiptBody(receiptData: String, password: String?) -> ByteBuffer {
        guard isPlain(receiptData), password.map(isPlain) ?? true else {
            let body = try? JSONEncoder().encode(VerifyReceiptRequest(receiptData: receiptData, password: password))
            return ByteBuffer(bytes: body ?? Data())
        }
        var buffer = ByteBuffer()
        buffer.reserveCapacity(receiptData.utf8.count + (password?.utf8.count ?? 0) + 40)
        buffer.writeString(#"{"receipt-data":""#)
        buffer.writeString(receiptData)
        if let password {
            buffer.writeString(#"","password":""#)
            buffer.writeString(password)
        }
        buffer.writeString(#""}"#)
        return buffer
    }

    /// Whether `text` is only base64's, base64url's or hex's characters, which JSON writes as they are.
    static func isPlain(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            var plain = true
            for byte in bytes { plain = plain && plainBytes[Int(byte)] }
            return plain
        }
    }

    /// `isPlain`'s characters, by byte: a table read without a branch per byte (a `switch` per byte over a
    /// receipt's kilobytes was 1% of a confirmation's CPU).
    private static let plainBytes: [Bool] = (0..<256).map { value in
        switch UInt8(value) {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="),
            UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
    }

    /// Get Transaction Info, authenticated with the app's App Store Server API key.
    func transactionInfo(_ environment: AppStoreEnvironment, transactionId: String, app: ServerApp) async -> Answer {
        await serverAPI(
            environment,
            endpoint: .serverAPI,
            app: app,
            path: "/inApps/v1/transactions/\(Self.pathSegment(transactionId))"
        )
    }

    /// Get Notification History: one page of the notifications Apple sent (or tried to send) in the request's
    /// window; `paginationToken` is the previous page's, nil for the first.
    func notificationHistory(
        _ environment: AppStoreEnvironment,
        _ body: NotificationHistoryRequest,
        paginationToken: String?,
        app: ServerApp
    ) async -> Answer {
        guard let json = try? AppleJSON.makeEncoder().encode(body) else {
            return .misconfigured("the Notification History request could not be encoded")
        }
        let query = paginationToken.map { "?" + QueryString.format([("paginationToken", $0)]) } ?? ""
        return await serverAPI(
            environment,
            endpoint: .notificationHistory,
            app: app,
            path: "/inApps/v1/notifications/history" + query,
            method: .POST,
            body: ByteBuffer(bytes: json)
        )
    }

    /// Get Transaction History (v2): one page of the history of the customer who owns `transactionId`, in
    /// modification order, after `revision` (the previous page's or the previous run's; nil for the whole history).
    func transactionHistory(
        _ environment: AppStoreEnvironment,
        transactionId: String,
        revision: String?,
        app: ServerApp
    ) async -> Answer {
        let query = TransactionHistoryQuery(revision: revision).queryString
        return await serverAPI(
            environment,
            endpoint: .transactionHistory,
            app: app,
            path: "/inApps/v2/history/\(Self.pathSegment(transactionId))" + (query.isEmpty ? "" : "?" + query)
        )
    }

    /// Send Consumption Information (v2): what the server knows of a purchase whose customer asked Apple for a
    /// refund. Apple answers 202 with no body.
    func sendConsumptionInformation(
        _ environment: AppStoreEnvironment,
        transactionId: String,
        body: [UInt8],
        app: ServerApp
    ) async -> Answer {
        await serverAPI(
            environment,
            endpoint: .consumption,
            app: app,
            path: "/inApps/v2/transactions/consumption/\(Self.pathSegment(transactionId))",
            method: .PUT,
            body: ByteBuffer(bytes: body)
        )
    }

    /// A call to the App Store Server API, authenticated with the app's key.
    private func serverAPI(
        _ environment: AppStoreEnvironment,
        endpoint: AppleEndpoint,
        app: ServerApp,
        path: String,
        method: HTTPMethod = .GET,
        body: ByteBuffer? = nil
    ) async -> Answer {
        guard let base = endpoints.serverAPI[environment] else {
            return .misconfigured("no App Store Server API URL for \(environment)")
        }
        guard let token = try? await bearerToken(app: app) else {
            return .misconfigured("the app's App Store Server API key is unusable")
        }
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Accept", value: "application/json")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(body)
        }
        return await execute(request, endpoint: endpoint, environment: environment)
    }

    /// A transaction id as a path segment: Apple's are digits; anything else is percent-encoded, never a path.
    private static func pathSegment(_ id: String) -> String {
        id.addingPercentEncoding(withAllowedCharacters: asciiDigitsAndLetters) ?? ""
    }

    private static let asciiDigitsAndLetters = CharacterSet(
        charactersIn: "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    )

    /// Sends a request and tells the metrics how long `endpoint` (as `till_apple_calls_total` names it) took.
    private func execute(_ request: HTTPClientRequest, endpoint: AppleEndpoint, environment: AppStoreEnvironment) async
        -> Answer
    {
        let clock = ContinuousClock()
        let start = clock.now
        let answer = await send(request)
        metrics.appleCallTook(endpoint: endpoint, environment: environment, answer: answer, duration: clock.now - start)
        return answer
    }

    private func send(_ request: HTTPClientRequest) async -> Answer {
        do {
            let pool = pools.count == 1 ? pools[0] : pools[turn.next() % pools.count]
            let response = try await pool.execute(request, timeout: timeAmount)
            let body = try await response.body.collect(upTo: 4 << 20)
            return .http(
                status: Int(response.status.code),
                body: Array(body.readableBytesView),
                retryAfter: response.headers.first(name: "Retry-After").flatMap { Self.retryAfter($0, now: Date()) }
            )
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            return .transport("timeout")
        } catch let error as HTTPClientError where error == .connectTimeout {
            return .transport("connect timeout")
        } catch let error as HTTPClientError where error == .remoteConnectionClosed {
            return .transport("connection closed")
        } catch {
            return .transport("\(error)".prefix(200).description)
        }
    }

    /// How long `Retry-After` asks to wait from `now`. Apple's App Store Server API gives the UNIX time in
    /// milliseconds at which the next request may go ("Identifying rate limits"); HTTP's own form, a number of
    /// seconds, is read too (a number below a UNIX time of 2001 in milliseconds cannot be one). A time already passed
    /// is no wait; anything else (a date, a word) is ignored, and the back-off alone decides.
    static func retryAfter(_ value: String, now: Date) -> Duration? {
        guard let number = Int64(value.trimmingCharacters(in: .whitespaces)), number >= 0 else { return nil }
        if number < 1_000_000_000_000 { return .seconds(number) }
        return .milliseconds(max(0, number - now.millisecondsSince1970))
    }

    /// An ES256 bearer token for the App Store Server API: kid, iss, aud `appstoreconnect-v1`, bid, five minutes.
    private func bearerToken(app: ServerApp) async throws -> String {
        guard let pem = app.apiPrivateKey, let keyId = app.apiKeyId, let issuer = app.apiIssuerId else {
            throw QueueRefusal(.noAPIKey, "the app has no App Store Server API key")
        }
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(pem: pem), kid: JWKIdentifier(string: keyId))
        let now = Date()
        let claims = APIClaims(
            iss: .init(value: issuer),
            iat: .init(value: now),
            exp: .init(value: now.addingTimeInterval(300)),
            aud: .init(value: ["appstoreconnect-v1"]),
            bid: app.bundleId
        )
        return try await keys.sign(claims, kid: JWKIdentifier(string: keyId), header: ["typ": "JWT"])
    }
}

struct APIClaims: JWTPayload {
    var iss: IssuerClaim
    var iat: IssuedAtClaim
    var exp: ExpirationClaim
    var aud: AudienceClaim
    var bid: String

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
