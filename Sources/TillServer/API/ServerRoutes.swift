import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import TillAppStore
import TillCatalogue
import TillConsole
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillLedger

/// The request context of the server's routes: the app the request authenticated as, and a request id.
public struct ServerRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The app its key named (`AppKeyMiddleware`).
    var authenticated: AuthenticatedApp?
    /// This request's id (`X-Request-Id`), set by `RequestMiddleware`.
    var requestId = ""
    /// The console's session (`ConsoleGate`), and the fields of a form it read.
    var console: ConsoleSessions.Current?
    var form: [String: String] = [:]
    /// The connection the request came on: its address is formatted only when a route asks (`remoteAddress`).
    private let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
    }

    /// The address the request came from (the console's sign-in limit and audit).
    var remoteAddress: String? { channel.remoteAddress?.ipAddress }

    public var requestDecoder: JSONDecoder { JSONDecoder() }
    public var responseEncoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
    /// The largest body any route reads whole (one carrying a receipt); each route reads at most its own limit.
    public var maxUploadSize: Int { BodyLimit.receipt }

    /// A path parameter percent-decoded (the router hands them over as sent), so `alice%20smith` is
    /// `alice smith` and an encoded `%2F` is seen, and refused where it matters, as a slash.
    func pathParameter(_ name: String) throws -> String {
        let raw = try parameters.require(name)
        // Without a `%` there is nothing to decode (Foundation's decoder is a measurable part of a customer read).
        guard raw.utf8.contains(UInt8(ascii: "%")) else { return raw }
        return raw.removingPercentEncoding ?? raw
    }

    /// The `{customer}` of a path, percent-decoded and checked as every customer id is (`CustomerIdentifier`).
    func customerParameter() throws -> String {
        try CustomerIdentifier.validated(try pathParameter("customer"), field: "the customer in the path")
    }

    func requireApp() throws -> ServerApp {
        guard let app = authenticated?.app else {
            throw TillHTTPError(.unauthorized, "unauthorized", "send Authorization: Bearer <app key>")
        }
        return app
    }
}

/// The server's HTTP interface (see docs/api.md).
public func buildServerRouter(_ server: PurchaseServer) -> Router<ServerRequestContext> {
    // HEAD is answered for every GET, as its GET without the body (RFC 9110 §9.3.2): a monitor or a `curl -I` of
    // `/health`, `/ready` or a download learns the status and the headers without the bytes.
    let router = Router(context: ServerRequestContext.self, options: .autoGenerateHeadEndpoints)
    let routeMethods = RouteMethods(headOfGet: true)
    if let tracing = server.tracing {
        // Outermost: the request's span holds everything, its log line included (docs/tracing.md). No header is
        // recorded, and a download URL's signature is not kept.
        router.middlewares.add(TracingScopeMiddleware(tracer: tracing.tracer))
        router.middlewares.add(TracingMiddleware(redactingQueryParameters: ["signature"]))
    }
    router.middlewares.add(RequestMiddleware(metrics: server.metrics, pacer: server.queue.pacer))
    router.middlewares.add(
        TillHTTPErrorMiddleware(routes: routeMethods, program: "server") { ["request_id": .string($0.requestId)] }
    )
    router.get("/health") { _, _ in
        Response(
            status: .ok,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#))
        )
    }
    router.get("/ready") { _, _ in ServerFrontDoor.response(await server.readiness.check()) }
    router.get("/metrics") { _, _ in
        var response = Response(
            status: .ok,
            body: .init(byteBuffer: ByteBuffer(bytes: try await server.metricsExposition()))
        )
        response.headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        return response
    }
    router.get("/openapi.yaml", use: OpenAPIDocument.respond)
    addNotificationRoutes(to: router, server)
    let appGroup = router.group("v1").add(middleware: AppKeyMiddleware(server: server))
    addAppRoutes(to: appGroup, server)
    addConsumptionAppRoutes(to: appGroup, server)
    addAppTransactionRoutes(to: appGroup, server)
    addOfferAppRoutes(to: appGroup, server)
    let adminGroup = router.group("admin/v1").add(
        middleware: OperatorTokenMiddleware(token: server.configuration.operatorToken)
    )
    addAdminRoutes(to: adminGroup, server)
    addConsumptionAdminRoutes(to: adminGroup, server)
    addOfferAdminRoutes(to: adminGroup, server)
    addEventAdminRoutes(to: adminGroup, server)
    ContentController(server: server).addRoutes(to: router)
    addConsoleRoutes(to: router, server)
    routeMethods.record(router.routes)
    return router
}

// MARK: App-facing API

func addAppRoutes(to group: RouterGroup<ServerRequestContext>, _ server: PurchaseServer) {
    group.get("products") { request, context in
        let app = try context.requireApp()
        let list = try await server.catalogue.masterList(bundleId: app.bundleId)
        let conditional = DownloadPlan.plan(
            ifNoneMatch: request.headers[values: .ifNoneMatch],
            range: nil,
            ifRange: nil,
            etag: list.etag,
            size: 0
        )
        if conditional == .notModified {
            var response = Response(status: .notModified)
            response.headers[.eTag] = list.etag
            return response
        }
        var response = try json(list, context: context)
        response.headers[.eTag] = list.etag
        response.headers[.cacheControl] = "no-cache"
        return response
    }
    group.post("receipts") { request, context in
        let app = try context.requireApp()
        let wait = try waitParameter(request)
        let input = try await decode(SubmissionRequest.self, request, context, limit: BodyLimit.receipt)
        let result = try await server.intake.submit(input, app: app)
        return try await respondWithWait(
            result,
            customerId: input.customerId.trimmingCharacters(in: .whitespaces),
            wait: wait,
            context: context,
            server: server,
            app: app
        )
    }
    group.get("submissions/{id}") { _, context in
        let app = try context.requireApp()
        return try json(
            try await server.intake.submission(id: try context.pathParameter("id"), bundleId: app.bundleId),
            context: context
        )
    }
    group.get("customers/{customer}") { _, context in
        let app = try context.requireApp()
        let body = try await server.customers.customerBody(
            bundleId: app.bundleId,
            customerId: try context.customerParameter()
        )
        var response = Response(status: .ok, body: .init(byteBuffer: body))
        response.headers[.contentType] = "application/json"
        return response
    }
    group.get("keys") { _, context in
        _ = try context.requireApp()
        var response = try json(server.snapshots.keys, context: context)
        response.headers[.cacheControl] = "public, max-age=3600"
        return response
    }
    group.get("customers/{customer}/snapshot") { _, context in
        let app = try context.requireApp()
        let snapshot = try await server.snapshots.snapshot(
            bundleId: app.bundleId,
            customerId: try context.customerParameter()
        )
        var response = try json(snapshot, context: context)
        response.headers[.cacheControl] = "no-store"
        return response
    }
    group.post("customers/{customer}/restore") { request, context in
        let app = try context.requireApp()
        let wait = try waitParameter(request)
        let input = try await decode(Components.Schemas.RestoreRequest.self, request, context, limit: BodyLimit.receipt)
        let customerId = try context.customerParameter()
        var result = try await server.intake.restore(
            SubmissionRequest(
                customerId: customerId,
                receipt: input.receipt,
                transactionReceipt: input.transactionReceipt,
                signedTransaction: input.signedTransaction,
                idempotencyKey: input.idempotencyKey
            ),
            app: app,
            wait: wait
        )
        result.signedSnapshot = try await server.snapshots.snapshot(
            bundleId: app.bundleId,
            customerId: customerId
        ).signedSnapshot
        return try json(result, context: context)
    }
    group.post("customers/{customer}/debits") { request, context in
        let app = try context.requireApp()
        let input = try await decode(Components.Schemas.DebitRequest.self, request, context)
        let balances = try await server.ledger.debit(
            bundleId: app.bundleId,
            customerId: try context.customerParameter(),
            credit: input.credit,
            amount: input.amount,
            requestId: input.requestId
        )
        return try json(Components.Schemas.Balances(balances: .init(balances)), context: context)
    }
    group.post("customers/{customer}/aliases") { request, context in
        let app = try context.requireApp()
        let input = try await decode(Components.Schemas.AliasRequest.self, request, context)
        let customer = try await server.customers.link(
            bundleId: app.bundleId,
            guestId: input.customerId,
            to: try context.customerParameter()
        )
        return try json(customer, context: context)
    }
}

/// `?wait=SECONDS`: answers 200 once Apple confirmed (or refused), 202 while it is still pending; with the signed
/// snapshot of `customerId` (as the app sent it, trimmed) as it is when the answer leaves.
private func respondWithWait(
    _ result: SubmissionResult,
    customerId: String,
    wait: Duration?,
    context: ServerRequestContext,
    server: PurchaseServer,
    app: ServerApp
) async throws -> Response {
    var result = result
    if let wait {
        let submission = try await server.intake.waitForSettlement(
            id: result.submission.id,
            bundleId: app.bundleId,
            timeout: wait
        )
        if submission.state != result.submission.state {
            result.submission = submission
            result.customer = try await server.customers.customer(
                bundleId: app.bundleId,
                customerId: submission.customerId
            )
        }
    }
    // The customer the answer shows is the one signed: both are as the submission's transaction left them.
    result.signedSnapshot = try server.snapshots.signedSnapshot(
        of: result.customer,
        bundleId: app.bundleId,
        customerId: customerId
    ).signedSnapshot
    let settled = result.submission.state.isSettled
    var response = Response(
        status: settled ? .ok : .accepted,
        body: .init(byteBuffer: ByteBuffer(bytes: result.json()))
    )
    response.headers[.contentType] = "application/json"
    return response
}

/// `?wait=SECONDS`, at most 60; nil when absent or zero. Anything but a finite number of seconds from 0 is `400
/// invalidWait`: it was read as no wait, and the app that meant to wait got a 202 it did not expect. Read before the
/// body is decoded, so that nothing is recorded for a request refused.
private func waitParameter(_ request: Request) throws -> Duration? {
    guard let text = request.uri.queryParameters.get("wait") else { return nil }
    guard let wait = Double(text), wait.isFinite, wait >= 0 else {
        throw TillHTTPError.badRequest(
            "invalidWait",
            "wait is a number of seconds, 0 or more (at most 60 are waited), not \"\(text)\""
        )
    }
    return wait > 0 ? .milliseconds(Int64(min(wait, 60) * 1000)) : nil
}

/// `value` as JSON with the server's encoder (sorted keys, unescaped slashes).
func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok, context: ServerRequestContext) throws -> Response
{
    try JSONBody.response(value, status: status, encoder: context.responseEncoder)
}

/// The request body as a `T`, within the route's limit (64 KiB unless it carries a receipt).
///
/// A `null` in a field of `T` is refused (400 `invalidBody`): no request schema of the contract has a field that may
/// be null, and Foundation's decoder would read one as the field left out, taking a body the contract rules out
/// (Schemathesis found `PATCH /admin/v1/apps/{bundle}` taking `"inAppPurchasePrivateKey": null`). A member the schema
/// does not name is ignored whatever it holds, as the schema allows. Apple's notifications are Apple's bodies, read
/// by Apple's rules (`NotificationRoutes`).
func decode<T: Decodable & Equatable>(
    _ type: T.Type,
    _ request: Request,
    _ context: ServerRequestContext,
    limit: Int = BodyLimit.json
) async throws -> T {
    try await JSONBody.decode(type, from: request, limit: limit, decoder: context.requestDecoder, refusingNull: true)
}

enum ReportDates {
    /// `2026-11-01` (UTC midnight) or UNIX milliseconds.
    static func parse(_ text: String) -> Int64? {
        if let ms = Int64(text) { return ms }
        guard let date = ReceiptDate.parseRFC3339(text + "T00:00:00Z") else { return nil }
        return date.millisecondsSince1970
    }
}

extension SubmissionResult {
    /// The answer as `JSONEncoder` with `.sortedKeys` and `.withoutEscapingSlashes` writes it (the server's
    /// response encoder), without its cost: this is written once per purchase, by the writer generated with the
    /// contract (`Generated/JSONWriters.swift`).
    func json() -> [UInt8] {
        var writer = JSONWriter(capacity: 4096)
        writeJSON(to: &writer)
        return writer.bytes
    }
}
