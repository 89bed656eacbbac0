import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization
import TillHTTPKit

/// Checks a Standard Webhooks signature by hand, as docs/events.md shows it: HMAC-SHA256, keyed with the bytes of the
/// `whsec_` secret, over `webhook-id.webhook-timestamp.body`, compared in constant time with each `v1,` signature of
/// the header; a timestamp more than `tolerance` away from now is refused (a replayed request).
public enum StandardWebhookVerifier {
    public static func isValid(
        body: [UInt8],
        id: String,
        timestamp: String,
        signatures: String,
        secret: String,
        now: Date = Date(),
        tolerance: TimeInterval = 300
    ) -> Bool {
        guard secret.hasPrefix("whsec_"), let key = Data(base64Encoded: String(secret.dropFirst(6))),
            let sent = TimeInterval(timestamp), abs(now.timeIntervalSince1970 - sent) <= tolerance
        else { return false }
        let signed = Data("\(id).\(timestamp).".utf8) + body
        for signature in signatures.split(separator: " ") {
            let parts = signature.split(separator: ",", maxSplits: 1)
            guard parts.count == 2, parts[0] == "v1", let mac = Data(base64Encoded: String(parts[1])) else { continue }
            if HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: signed, using: SymmetricKey(data: key)) {
                return true
            }
        }
        return false
    }
}

/// An app's backend as far as webhooks go, for development, `till demo`, the benchmarks and the tests: an HTTP endpoint
/// that receives events, checks each signature with the secret it is given, keeps what it received, and answers as it
/// is told (2xx, an error status, or nothing at all).
public final class WebhookReceiver: Sendable {
    /// One request it received.
    public struct Delivery: Sendable {
        public var id: String
        public var timestamp: String
        public var signatures: String
        public var body: [UInt8]
        /// Whether a signature verifies with the secret it had then.
        public var verified: Bool
        /// What it answered.
        public var status: Int
        /// When it arrived.
        public var receivedAt: Date
    }

    /// How it answers.
    public enum Behaviour: Sendable, Equatable {
        case accept
        /// This status, as a receiver with a bug or down for maintenance would.
        case fail(status: Int)
        /// Nothing, until the connection times out (a receiver that hangs).
        case hang
        /// Accepted after this long (a slow receiver).
        case acceptAfter(Duration)
        /// A redirect to `location` (what arrives there is taken).
        case redirect(status: Int, location: String)
        /// An error status with a long body (what a receiver's error page sends).
        case failVerbosely(status: Int, bytes: Int)
    }

    private struct State {
        var secret: String?
        var behaviour: Behaviour = .accept
        var deliveries: [Delivery] = []
        var keep = true
        var count = 0
        var handling = 0
        var mostAtOnce = 0
        var timing = false
        var latencies: [Int64] = []
    }

    private let state: Mutex<State>
    /// Signalled at each request (tests wait on it).
    public let received = Wakeup()
    /// Ends the requests held by `.hang`.
    private let released = Wakeup()

    /// Answers the requests that `.hang` holds (a test ends with it, so that its server stops at once).
    public func release() { released.signal() }

    /// - Parameters:
    ///   - keep: whether to keep every delivery (a benchmark only counts them).
    ///   - timing: whether to note each delivery's latency: from its event's `createdAt` to its arrival.
    public init(secret: String? = nil, keep: Bool = true, timing: Bool = false) {
        state = Mutex(State(secret: secret, keep: keep, timing: timing))
    }

    /// The latencies noted since the last call (ms; with `timing`).
    public func takeLatencies() -> [Int64] {
        state.withLock { state in
            defer { state.latencies.removeAll(keepingCapacity: true) }
            return state.latencies
        }
    }

    /// The event's `createdAt` (UNIX ms) in a delivery's body: the first one, which is the event's own.
    static func createdAt(in body: [UInt8]) -> Int64? {
        guard let key = body.firstRange(of: Array(#""createdAt":"#.utf8)) else { return nil }
        let digits = body[key.upperBound...].prefix { (48...57).contains($0) }
        return digits.isEmpty ? nil : digits.reduce(0) { $0 * 10 + Int64($1 - 48) }
    }

    public var secret: String? {
        get { state.withLock { $0.secret } }
        set { state.withLock { $0.secret = newValue } }
    }

    public var behaviour: Behaviour {
        get { state.withLock { $0.behaviour } }
        set { state.withLock { $0.behaviour = newValue } }
    }

    /// Everything received so far, in the order it came.
    public var deliveries: [Delivery] { state.withLock { $0.deliveries } }

    /// How many requests came.
    public var count: Int { state.withLock { $0.count } }

    /// The most requests it was handling at once.
    public var mostAtOnce: Int { state.withLock { $0.mostAtOnce } }

    /// Forgets what was received.
    public func reset() { state.withLock { $0.deliveries.removeAll() } }

    /// The receiver as an HTTP server on `host`:`port` (0: a free one, reported to `onServerRunning`); it takes `POST`
    /// on any path. It logs to `logger` (Hummingbird's own logger, at info, when none is given).
    public func application(
        host: String = "127.0.0.1",
        port: Int = 0,
        logger: Logger? = nil,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = Router()
        router.post("**") { request, context -> Response in
            let body = try await request.body.collect(upTo: 4 * 1024 * 1024)
            return await self.receive(request, body: Array(body.readableBytesView))
        }
        return Application(
            router: router,
            configuration: .init(address: .hostname(host, port: port), serverName: "till-webhook-receiver"),
            onServerRunning: { await onServerRunning($0.localAddress?.port ?? port) },
            logger: logger
        )
    }

    private func receive(_ request: Request, body: [UInt8]) async -> Response {
        let releases = released.current
        let id = request.headers[HTTPField.Name("webhook-id")!] ?? ""
        let timestamp = request.headers[HTTPField.Name("webhook-timestamp")!] ?? ""
        let signatures = request.headers[HTTPField.Name("webhook-signature")!] ?? ""
        let (secret, told, keep) = state.withLock { ($0.secret, $0.behaviour, $0.keep) }
        var behaviour = told
        if case .redirect(_, let location) = behaviour, location == request.uri.path {
            behaviour = .accept  // where it sends them: taken
        }
        let status: Int =
            switch behaviour {
            case .accept, .acceptAfter: 204
            case .fail(let status), .redirect(let status, _), .failVerbosely(let status, _): status
            case .hang: 0
            }
        let verified =
            keep
            && secret.map {
                StandardWebhookVerifier.isValid(
                    body: body,
                    id: id,
                    timestamp: timestamp,
                    signatures: signatures,
                    secret: $0
                )
            } ?? false
        let arrived = Int64((Date().timeIntervalSince1970 * 1000).rounded())
        state.withLock {
            if $0.timing, let created = Self.createdAt(in: body) { $0.latencies.append(arrived - created) }
            $0.count += 1
            $0.handling += 1
            $0.mostAtOnce = max($0.mostAtOnce, $0.handling)
            if $0.keep {
                $0.deliveries.append(
                    Delivery(
                        id: id,
                        timestamp: timestamp,
                        signatures: signatures,
                        body: body,
                        verified: verified,
                        status: status,
                        receivedAt: Date()
                    )
                )
            }
        }
        received.signal()
        switch behaviour {
        case .hang:
            // Holds the request until the sender gives up (its timeout), or `release()`, or a minute passes.
            await released.wait(since: releases, timeout: .seconds(60))
        case .acceptAfter(let delay):
            try? await Task.sleep(for: delay)
        default:
            break
        }
        state.withLock { $0.handling -= 1 }
        var response = Response(status: .init(code: status == 0 ? 503 : status))
        switch behaviour {
        case .redirect(_, let location):
            response.headers[.location] = location
        case .failVerbosely(_, let bytes):
            response.body = .init(byteBuffer: ByteBuffer(repeating: UInt8(ascii: "x"), count: bytes))
        default:
            break
        }
        return response
    }
}
