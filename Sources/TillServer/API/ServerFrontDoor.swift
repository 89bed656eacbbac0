import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization
import TillCatalogue
import TillContract
import TillCore
import TillHTTPKit
import TillLedger

/// What `till serve` listens with, from before its database is open until it stops.
///
/// - **Opening** (the database opening and migrating): `/health` is 200 (the process is alive), `/ready` is
///   `503 migrating`, every other request `503 starting` with `Retry-After`.
/// - **Open**: the server's routes (`buildServerRouter`), `/ready` among them (`Readiness`: 503 while storage
///   fails or does not answer).
/// - **Draining** (after SIGTERM, for `shutdown.drain-seconds`): every route still serves and `/ready` is `503
///   draining`, so that a balancer stops sending before the listener closes.
///
/// `/health` stays liveness throughout: it never looks at storage, so that an orchestrator does not restart a
/// process that is waiting for its database to come back.
public final class ServerFrontDoor: HTTPResponder, Sendable {
    public typealias Context = ServerRequestContext

    private struct State: Sendable {
        var server: PurchaseServer?
        var routes: RouterResponder<ServerRequestContext>?
        var draining = false
    }

    private let state = Mutex(State())

    public init() {}

    /// The server is open: its routes answer from now on.
    public func open(_ server: PurchaseServer) {
        let routes = buildServerRouter(server).buildResponder()
        let draining = state.withLock { state in
            state.server = server
            state.routes = routes
            return state.draining
        }
        if draining { server.readiness.drain() }
    }

    /// Whether the server is open (its routes answer).
    public var isOpen: Bool { state.withLock { $0.routes != nil } }

    /// SIGTERM arrived: `/ready` says so while the routes go on serving.
    public func drain() {
        state.withLock { state in
            state.draining = true
            return state.server
        }?.readiness.drain()
    }

    public func respond(to request: Request, context: ServerRequestContext) async throws -> Response {
        let (routes, draining) = state.withLock { ($0.routes, $0.draining) }
        if let routes { return try await routes.respond(to: request, context: context) }
        // While opening, a HEAD is answered as its GET without the body, as the open server answers it.
        let answer = try opening(request, context: context, draining: draining)
        return request.method == .head ? answer.createHeadResponse() : answer
    }

    /// The answer before the routes are open: `/health` and `/ready` say so, anything else is `503 starting`.
    private func opening(_ request: Request, context: ServerRequestContext, draining: Bool) throws -> Response {
        switch (request.method, request.uri.path) {
        case (.get, "/health"), (.head, "/health"):
            var writer = JSONWriter()
            writer.object { w in w.field("status", "ok") }
            return Response(
                status: .ok,
                headers: [.contentType: "application/json; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: writer.bytes))
            )
        case (.get, "/ready"), (.head, "/ready"):
            return Self.response(draining ? Readiness.draining : Readiness.migrating)
        default:
            return try TillHTTPError(
                .serviceUnavailable,
                "starting",
                "the server is opening its database (migrations run at start); try again shortly",
                headers: [.retryAfter: "1"]
            ).response(from: request, context: context)
        }
    }

    /// `/ready`'s answer: 200 when ready, otherwise 503 with `Retry-After`; never cached.
    static func response(_ readiness: Components.Schemas.Readiness) -> Response {
        var writer = JSONWriter()
        writer.object { w in
            w.field("message", readiness.message)
            w.field("status", readiness.status.rawValue)
        }
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"]
        if readiness.status != .ready { headers[.retryAfter] = "1" }
        return Response(
            status: readiness.status == .ready ? .ok : .serviceUnavailable,
            headers: headers,
            body: .init(byteBuffer: ByteBuffer(bytes: writer.bytes))
        )
    }
}
