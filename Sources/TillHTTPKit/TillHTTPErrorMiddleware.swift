import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import TillStorage

/// Makes every failure a JSON `TillHTTPError` with a stable code: routes that do not exist (404 `notFound`), known paths
/// asked with a method they do not take (405 `methodNotAllowed`, with `Allow`), Hummingbird's own errors, a body over the
/// limit a route collected it with (413 `bodyTooLarge`, as `JSONBody` answers it), storage that
/// is unavailable (503 `storageUnavailable` with `Retry-After`: a full disk or a database away is not the program's
/// defect, and the request succeeds when resent; the outage is logged once by `StorageGate`, not per request), and
/// anything unexpected (500 `internalError`, logged, its details kept out of the answer).
public struct TillHTTPErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let routes: RouteMethods
    /// Names the program in the 500 message ("the server could not handle the request").
    let program: String
    /// Log metadata of a request (its request id) for the line a 500 writes.
    let metadata: @Sendable (Context) -> Logger.Metadata

    /// - Parameter routes: filled from the router's routes once they are all added (`RouteMethods.record`).
    public init(
        routes: RouteMethods,
        program: String,
        metadata: @escaping @Sendable (Context) -> Logger.Metadata = { _ in [:] }
    ) {
        self.routes = routes
        self.program = program
        self.metadata = metadata
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as TillHTTPError {
            throw error
        } catch let refusal as any HTTPRefusal {
            // A room's refusal, through its mapping to a status.
            throw refusal.httpError
        } catch let error as HTTPError where error.status == .notFound && !Self.routed(context) {
            // The router matched nothing: either the path is unknown, or it is known under other methods.
            let allowed = routes.methods(forPath: request.uri.path)
            guard !allowed.isEmpty else { throw TillHTTPError(.notFound, "notFound", "no route \(request.uri.path)") }
            let list = allowed.map(\.rawValue).joined(separator: ", ")
            throw TillHTTPError(
                .methodNotAllowed,
                "methodNotAllowed",
                "\(request.uri.path) takes \(list), not \(request.method.rawValue)",
                headers: [.allow: list]
            )
        } catch let error as HTTPError {
            throw TillHTTPError(
                error.status,
                error.status == .notFound ? "notFound" : "httpError",
                error.body ?? error.status.reasonPhrase
            )
        } catch let error as NIOTooManyBytesError {
            // What `collectBody(upTo:)` throws: Hummingbird answers it as a 413 with no body.
            throw TillHTTPError(
                .contentTooLarge,
                "bodyTooLarge",
                error.maxBytes.map { "the request body is larger than \($0) bytes" }
                    ?? "the request body is larger than the route takes"
            )
        } catch let error as any HTTPResponseError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            if let storage = StorageUnavailable.classify(error) { throw Self.answer(storage) }
            context.logger.error(
                "request failed: \(request.method) \(request.uri.path): \(error)",
                metadata: metadata(context)
            )
            throw TillHTTPError(.internalServerError, "internalError", "the \(program) could not handle the request")
        }
    }

    /// `503 storageUnavailable`, with `Retry-After` and what a client may conclude.
    public static func answer(_ storage: StorageUnavailable) -> TillHTTPError {
        let outcome =
            storage.reason == .outcomeUnknown
            ? "the connection to the database was lost during the request, which may or may not have been recorded: "
                + "send it again with the same idempotency key"
            : "nothing was recorded: send the request again"
        return TillHTTPError(
            .serviceUnavailable,
            "storageUnavailable",
            "the \(storage.reason == .diskFull ? "disk is full" : "database is unavailable") (\(storage.reason.rawValue)); \(outcome)",
            headers: [.retryAfter: "\(storage.retryAfterSeconds)"]
        )
    }

    /// Whether the router matched a route: it then names the endpoint by its path (`/v1/…`); when it matched none,
    /// the name is absent or Hummingbird's `NotFound`.
    public static func routed(_ context: Context) -> Bool { context.endpointPath?.hasPrefix("/") == true }
}
