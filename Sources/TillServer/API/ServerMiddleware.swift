import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization
import TillAppStore
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillLedger

// The server's middleware: app key and operator token authentication, request ids, metrics and logs.

/// Authenticates apps by their key (`Authorization: Bearer tk_…`).
struct AppKeyMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let server: PurchaseServer

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard let header = request.headers.single(.authorization), header.hasPrefix("Bearer "),
            let authenticated = try await server.catalogue.app(appKey: String(header.dropFirst(7)))
        else { throw TillHTTPError(.unauthorized, "unauthorized", "send Authorization: Bearer <app key>") }
        var context = context
        context.authenticated = authenticated
        return try await next(request, context)
    }
}

/// Requires the operator token on the admin API, compared in constant time.
struct OperatorTokenMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let token: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let expected = Array("Bearer \(token)".utf8)
        let given = Array((request.headers.single(.authorization) ?? "").utf8)
        let equal = given.count == expected.count && zip(given, expected).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
        guard equal else {
            throw TillHTTPError(
                .unauthorized,
                "unauthorized",
                "the admin API needs Authorization: Bearer <operator token>"
            )
        }
        return try await next(request, context)
    }
}

/// Gives every request an id (the caller's `X-Request-Id` when it sends a sane one), puts it in the log
/// metadata and the response, logs one line per request, and counts and times it by route.
struct RequestMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let metrics: ServerMetrics
    /// Told of every request answered: confirmations yield while someone waits for this process.
    let pacer: ConfirmationPacer

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let clock = ContinuousClock()
        let start = clock.now
        let id = Self.requestId(request.headers.single(.requestId))
        var context = context
        context.requestId = id
        // Setting metadata makes the log handler format it again: only when lines at info level are written.
        let detailed = context.logger.logLevel <= .info
        if detailed { context.logger[metadataKey: "request_id"] = .string(id) }
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        }
        // A refusal to a HEAD (401, 404, 405, made before the GET's handler that the router runs for a HEAD) has no
        // body either; its headers, Content-Length included, stay those of the refusal.
        if request.method == .head { response = response.createHeadResponse() }
        response.headers[.requestId] = id
        let elapsed = clock.now - start
        let route = context.endpointPath ?? "unmatched"
        metrics.request(method: request.method.rawValue, route: route, status: response.status.code, duration: elapsed)
        pacer.served()
        // `/ready`'s 503 is its answer, not a failure: a balancer asks every few seconds while the server drains or
        // its storage fails (an outage the storage gate logs once), and each ask was an error line.
        let failed = response.status.code >= 500 && !(route == "/ready" && response.status == .serviceUnavailable)
        guard detailed || failed else { return response }
        context.logger.log(
            level: failed ? .error : .info,
            "\(request.method) \(request.uri.path) \(response.status.code)",
            metadata: [
                "route": .string(route),
                "status": .stringConvertible(response.status.code),
                "duration_ms": .string(String(format: "%.2f", Double(elapsed.nanoseconds) / 1e6)),
            ]
        )
        return response
    }

    /// The caller's id when it is 1–128 characters of letters, digits, `-`, `_` or `.`; otherwise a new one.
    static func requestId(_ given: String?) -> String {
        if let given, (1...128).contains(given.utf8.count),
            given.utf8.allSatisfy({
                $0 == 0x2D || $0 == 0x5F || $0 == 0x2E || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0)
                    || (0x61...0x7A).contains($0)
            })
        {
            return given
        }
        return RequestIdSource.shared.next()
    }
}

/// New request ids: 16 hex digits, distinct within a process and unlike another process's. Each is a counter
/// from a random start mixed by SplitMix64's finalizer (a bijection, so no two are equal); asking the system for
/// random bytes on every request was a system call on every read.
final class RequestIdSource: Sendable {
    static let shared = RequestIdSource()
    private let counter = Atomic<UInt64>(0)
    private let start = UInt64.random(in: 0...UInt64.max)

    func next() -> String {
        var z = start &+ counter.wrappingAdd(1, ordering: .relaxed).oldValue &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return String(unsafeUninitializedCapacity: 16) { buffer in
            let digits: StaticString = "0123456789abcdef"
            for index in 0..<16 {
                buffer[index] = digits.utf8Start[Int((z >> UInt64(60 - 4 * index)) & 0xF)]
            }
            return 16
        }
    }
}

extension HTTPField.Name {
    static let requestId = HTTPField.Name("X-Request-Id")!
}
