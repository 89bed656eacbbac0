import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import TillContract
import TillCore
import TillFormats
import TillHTTPKit

/// The request context of the server's routes: the app the request authenticated as, and a request id.
public struct ServerRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    var app: ServerApp?
    /// This request's id (`X-Request-Id`), set by `RequestMiddleware`.
    var requestId = ""

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
    }

    public var requestDecoder: JSONDecoder { JSONDecoder() }
    public var responseEncoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
    public var maxUploadSize: Int { 2 * 1024 * 1024 }

    /// A path parameter percent-decoded (the router hands them over as sent), so `alice%20smith` is
    /// `alice smith` and an encoded `%2F` is seen, and refused where it matters, as a slash.
    func pathParameter(_ name: String) throws -> String {
        let raw = try parameters.require(name)
        return raw.removingPercentEncoding ?? raw
    }

    /// The `{customer}` of a path, percent-decoded and checked as every customer id is (`CustomerIdentifier`).
    func customerParameter() throws -> String {
        try CustomerIdentifier.validated(try pathParameter("customer"), field: "the customer in the path")
    }

    func requireApp() throws -> ServerApp {
        guard let app else {
            throw TillHTTPError(.unauthorized, "unauthorized", "send Authorization: Bearer <app key>")
        }
        return app
    }
}

/// The server's HTTP interface (see docs/api.md).
public func buildServerRouter(_ server: PurchaseServer) -> Router<ServerRequestContext> {
    let router = Router(context: ServerRequestContext.self)
    let routeMethods = RouteMethods()
    router.middlewares.add(RequestMiddleware(metrics: server.metrics, pacer: server.confirmationPacer))
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
    addAppRoutes(to: router.group("v1").add(middleware: AppKeyMiddleware(server: server)), server)
    addAdminRoutes(
        to: router.group("admin/v1").add(
            middleware: OperatorTokenMiddleware(token: server.configuration.operatorToken)
        ),
        server
    )
    ContentController(server: server).addRoutes(to: router)
    routeMethods.record(router.routes)
    return router
}

// MARK: App-facing API

struct DebitInput: Codable {
    var credit: String
    var amount: Int64
    var requestId: String
}

struct AliasInput: Codable { var customerId: String }

/// A restore: the customer is in the path.
struct RestoreInput: Codable {
    var receipt: String?
    var transactionReceipt: String?
    var signedTransaction: String?
    var idempotencyKey: String?
}

func addAppRoutes(to group: RouterGroup<ServerRequestContext>, _ server: PurchaseServer) {
    group.get("products") { request, context in
        let app = try context.requireApp()
        let list = try await server.masterList(bundleId: app.bundleId)
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
        let input = try await decode(SubmissionRequest.self, request, context)
        let result = try await server.submit(input, app: app)
        return try await respondWithWait(
            result,
            customerId: input.customerId.trimmingCharacters(in: .whitespaces),
            request: request,
            context: context,
            server: server,
            app: app
        )
    }
    group.get("submissions/{id}") { _, context in
        let app = try context.requireApp()
        return try json(
            try await server.submission(id: try context.pathParameter("id"), bundleId: app.bundleId),
            context: context
        )
    }
    group.get("customers/{customer}") { _, context in
        let app = try context.requireApp()
        let body = try await server.customerBody(
            bundleId: app.bundleId,
            customerId: try context.customerParameter()
        )
        var response = Response(status: .ok, body: .init(byteBuffer: ByteBuffer(bytes: body)))
        response.headers[.contentType] = "application/json"
        return response
    }
    group.get("keys") { _, context in
        _ = try context.requireApp()
        var response = try json(server.snapshotKeys, context: context)
        response.headers[.cacheControl] = "public, max-age=3600"
        return response
    }
    group.get("customers/{customer}/snapshot") { _, context in
        let app = try context.requireApp()
        let snapshot = try await server.snapshot(
            bundleId: app.bundleId,
            customerId: try context.customerParameter()
        )
        var response = try json(snapshot, context: context)
        response.headers[.cacheControl] = "no-store"
        return response
    }
    group.post("customers/{customer}/restore") { request, context in
        let app = try context.requireApp()
        let input = try await decode(RestoreInput.self, request, context)
        let customerId = try context.customerParameter()
        var result = try await server.restore(
            SubmissionRequest(
                customerId: customerId,
                receipt: input.receipt,
                transactionReceipt: input.transactionReceipt,
                signedTransaction: input.signedTransaction,
                idempotencyKey: input.idempotencyKey
            ),
            app: app,
            wait: waitParameter(request)
        )
        result.signedSnapshot = try await server.snapshot(
            bundleId: app.bundleId,
            customerId: customerId
        ).signedSnapshot
        return try json(result, context: context)
    }
    group.post("customers/{customer}/debits") { request, context in
        let app = try context.requireApp()
        let input = try await decode(DebitInput.self, request, context)
        let balances = try await server.debit(
            bundleId: app.bundleId,
            customerId: try context.customerParameter(),
            credit: input.credit,
            amount: input.amount,
            requestId: input.requestId
        )
        return try json(["balances": balances], context: context)
    }
    group.post("customers/{customer}/aliases") { request, context in
        let app = try context.requireApp()
        let input = try await decode(AliasInput.self, request, context)
        let customer = try await server.link(
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
    request: Request,
    context: ServerRequestContext,
    server: PurchaseServer,
    app: ServerApp
) async throws -> Response {
    var result = result
    if let wait = waitParameter(request) {
        let submission = try await server.waitForSettlement(
            id: result.submission.id,
            bundleId: app.bundleId,
            timeout: wait
        )
        if submission.state != result.submission.state {
            result.submission = submission
            result.customer = try await server.customer(bundleId: app.bundleId, customerId: submission.customerId)
        }
    }
    // The customer the answer shows is the one signed: both are as the submission's transaction left them.
    result.signedSnapshot = try server.signedSnapshot(
        of: result.customer,
        bundleId: app.bundleId,
        customerId: customerId
    ).signedSnapshot
    let settled = result.submission.state != .pending && result.submission.state != .retrying
    var response = Response(
        status: settled ? .ok : .accepted,
        body: .init(byteBuffer: ByteBuffer(bytes: result.json()))
    )
    response.headers[.contentType] = "application/json"
    return response
}

/// `?wait=SECONDS`, at most 60; nil when absent, zero or not a number.
private func waitParameter(_ request: Request) -> Duration? {
    guard let wait = request.uri.queryParameters.get("wait").flatMap(Double.init), wait > 0 else {
        return nil
    }
    return .milliseconds(Int64(min(wait, 60) * 1000))
}

// MARK: Admin API

struct RevenueQuery {
    var from: Int64
    var to: Int64
    var groupBy: String
}

func addAdminRoutes(to group: RouterGroup<ServerRequestContext>, _ server: PurchaseServer) {
    group.get("apps") { request, context in
        let page = Page.of(
            try await server.apps(),
            key: { PageKey(number: $0.createdAt, text: $0.bundleId) },
            try request.pageRequest()
        )
        return try json(page.map(AppView.init), context: context)
    }
    group.post("apps") { request, context in
        let input = try await decode(ServerAppInput.self, request, context)
        return try json(AppView(try await server.createApp(input)), status: .created, context: context)
    }
    group.get("apps/{bundle}") { _, context in
        try json(
            AppView(try await server.app(bundleId: try context.pathParameter("bundle"))),
            context: context
        )
    }
    group.patch("apps/{bundle}") { request, context in
        let input = try await decode(ServerAppInput.self, request, context)
        return try json(
            AppView(
                try await server.updateApp(bundleId: try context.pathParameter("bundle"), input)
            ),
            context: context
        )
    }
    group.get("apps/{bundle}/products") { request, context in
        let page = Page.of(
            try await server.products(bundleId: try context.pathParameter("bundle")),
            key: { PageKey(number: Int64($0.position), text: $0.productId) },
            try request.pageRequest()
        )
        return try json(page, context: context)
    }
    group.put("apps/{bundle}/products/{product}") { request, context in
        let input = try await decode(CatalogProductInput.self, request, context)
        let written = try await server.putProduct(
            bundleId: try context.pathParameter("bundle"),
            productId: try context.pathParameter("product"),
            input
        )
        return try json(written.product, status: written.created ? .created : .ok, context: context)
    }
    group.get("submissions") { request, context in
        let state = request.uri.queryParameters.get("state") ?? "deadLettered"
        guard SubmissionState(rawValue: state) != nil else {
            throw TillHTTPError.badRequest(
                "invalidState",
                "state is pending, confirmed, retrying, rejected or deadLettered"
            )
        }
        return try json(try await server.submissions(state: state, page: try request.pageRequest()), context: context)
    }
    group.post("submissions/{id}/retry") { _, context in
        try json(try await server.requeue(id: try context.pathParameter("id")), context: context)
    }
    group.get("reports/revenue") { request, context in
        let query = request.uri.queryParameters
        guard let fromText = query.get("from"), let toText = query.get("to"),
            let from = ReportDates.parse(fromText), let to = ReportDates.parse(toText), from < to
        else {
            throw TillHTTPError.badRequest(
                "invalidRange",
                "from and to are dates (2026-11-01) or UNIX milliseconds, from before to"
            )
        }
        guard let groupBy = RevenueReport.GroupByPayload(rawValue: query.get("groupBy") ?? "day") else {
            throw TillHTTPError.badRequest("invalidGroupBy", "groupBy is day, product or currency")
        }
        let bundleId = query.get("bundleId")
        return try json(
            try await server.revenue(bundleId: bundleId, from: from, to: to, groupBy: groupBy),
            context: context
        )
    }
}

extension Request {
    /// The admin lists' `?limit=` and `?cursor=`.
    func pageRequest() throws -> PageRequest {
        try PageRequest(limit: uri.queryParameters.get("limit"), cursor: uri.queryParameters.get("cursor"))
    }
}

/// An app as the admin API shows it (the contract's `App`): the App Store Server API private key is never returned.
typealias AppView = Components.Schemas.App

extension Components.Schemas.App {
    init(_ app: ServerApp) {
        self.init(
            bundleId: app.bundleId,
            appAppleId: app.appAppleId,
            name: app.name,
            appKey: app.appKey,
            sharedSecrets: app.sharedSecrets,
            apiKeyId: app.apiKeyId,
            apiIssuerId: app.apiIssuerId,
            hasAPIKey: app.apiPrivateKey != nil,
            acceptSandbox: app.acceptSandbox,
            restorePolicy: app.restorePolicy,
            createdAt: app.createdAt
        )
    }
}

// MARK: Middleware and helpers

/// Authenticates apps by their key (`Authorization: Bearer tk_…`).
struct AppKeyMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let server: PurchaseServer

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer "),
            let app = try await server.app(appKey: String(header.dropFirst(7)))
        else { throw TillHTTPError(.unauthorized, "unauthorized", "send Authorization: Bearer <app key>") }
        var context = context
        context.app = app
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
        let given = Array((request.headers[.authorization] ?? "").utf8)
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
        let id = Self.requestId(request.headers[.requestId])
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
        response.headers[.requestId] = id
        let elapsed = clock.now - start
        let route = context.endpointPath ?? "unmatched"
        metrics.request(method: request.method.rawValue, route: route, status: response.status.code, duration: elapsed)
        pacer.served()
        guard detailed || response.status.code >= 500 else { return response }
        context.logger.log(
            level: response.status.code >= 500 ? .error : .info,
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
        let hex = String(UInt64.random(in: 0...UInt64.max), radix: 16)
        return String(repeating: "0", count: 16 - hex.utf8.count) + hex
    }
}

extension HTTPField.Name {
    static let requestId = HTTPField.Name("X-Request-Id")!
}

/// `value` as JSON with the server's encoder (sorted keys, unescaped slashes).
func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok, context: ServerRequestContext) throws -> Response
{
    try JSONBody.response(value, status: status, encoder: context.responseEncoder)
}

/// The request body as a `T`, within the server's upload limit.
func decode<T: Decodable>(_ type: T.Type, _ request: Request, _ context: ServerRequestContext) async throws -> T {
    try await JSONBody.decode(type, from: request, limit: context.maxUploadSize, decoder: context.requestDecoder)
}

enum ReportDates {
    /// `2026-11-01` (UTC midnight) or UNIX milliseconds.
    static func parse(_ text: String) -> Int64? {
        if let ms = Int64(text) { return ms }
        guard let date = ReceiptDate.parseRFC3339(text + "T00:00:00Z") else { return nil }
        return date.millisecondsSince1970
    }
}
