import Foundation
import Hummingbird
import Logging
import NIOCore
import TillCore
import TillFormats
import TillHTTPKit

/// Apple's own endpoints, per environment: verifyReceipt, and the App Store Server API (``addServerAPIRoutes``).
func addAppleRoutes(to router: Router<SimulatorRequestContext>, _ simulator: Simulator) {
    router.on("{environment}/verifyReceipt", method: .post) { request, context in
        try await verifyReceipt(request, context, simulator)
    }
    for method in [HTTPRequest.Method.get, .put, .delete, .patch] {
        router.on("{environment}/verifyReceipt", method: method) { request, context in
            try await verifyReceipt(request, context, simulator)
        }
    }
    addServerAPIRoutes(to: router.group("{environment}/inApps"), ServerAPICall(simulator: simulator))
}

/// Applies an endpoint's fault: latency, then an outage or nothing. Returns the rule for status faults.
private func applyFault(_ simulator: Simulator, _ environment: AppStoreEnvironment, _ endpoint: FaultEndpoint)
    async throws -> FaultRule?
{
    guard let rule = simulator.faults.take(environment: environment, endpoint: endpoint) else { return nil }
    if let latency = rule.latency { try await Task.sleep(for: .seconds(latency)) }
    if rule.outage == .hang { try await Task.sleep(for: .seconds(rule.hangSeconds ?? 300)) }
    return rule
}

/// verifyReceipt as Apple answers it: the endpoint's faults (latency, an outage, a forced status), then the answer.
///
/// In three functions, none inlined into another: an async function's frame holds every value it keeps across a
/// suspension, and it is held for the whole call, Apple's latency included. With the answer built inline this one's
/// frame was 11 KB, held for seconds by each of thousands of calls at once (heaptrack over `till bench submissions`).
private func verifyReceipt(_ request: Request, _ context: SimulatorRequestContext, _ simulator: Simulator) async throws
    -> Response
{
    let environment = try environment(context)
    if let answer = try await verifyReceiptFault(simulator, environment, context: context) { return answer }
    return try await verifyReceiptAnswer(request, context, simulator, environment)
}

/// The answer an endpoint's fault makes instead of verifyReceipt's, once its latency has passed.
@inline(never)
private func verifyReceiptFault(
    _ simulator: Simulator,
    _ environment: AppStoreEnvironment,
    context: SimulatorRequestContext
) async throws -> Response? {
    guard let rule = try await applyFault(simulator, environment, .verifyReceipt) else { return nil }
    if rule.outage != nil { return Response(status: .serviceUnavailable) }
    guard let status = rule.status else { return nil }
    let retryable = (21100...21199).contains(status) ? (rule.isRetryable ?? true) : nil
    return try jsonResponse(
        VerifyReceiptResponse(status: ReceiptStatus(status), isRetryable: retryable),
        context: context
    )
}

/// verifyReceipt's own answer: the request's body read, the receipt verified and answered.
@inline(never)
private func verifyReceiptAnswer(
    _ request: Request,
    _ context: SimulatorRequestContext,
    _ simulator: Simulator,
    _ environment: AppStoreEnvironment
) async throws -> Response {
    var request = request
    let body = try? await request.collectBody(upTo: 2 * 1024 * 1024)
    let response = await simulator.receipts.verifyReceipt(
        body: body.map { Array($0.readableBytesView) },
        isPOST: request.method == .post,
        environment: environment
    )
    return try jsonResponse(response, context: context)
}

/// One call of the App Store Server API as Apple answers it: the environment's faults, then the bearer token, then
/// the call; Apple's error body (`{"errorCode","errorMessage"}`, none for 401) for a ``ServerAPIFailure``, and
/// 500 `generalInternal` for anything unexpected.
struct ServerAPICall: Sendable {
    let simulator: Simulator

    /// The largest request body a call reads (Retention Messaging's images are the largest).
    static let bodyLimit = 5 * 1024 * 1024

    /// A call answered with a JSON body.
    func json<T: Encodable>(
        _ request: Request,
        _ context: SimulatorRequestContext,
        _ call: @escaping (SimApp, AppStoreEnvironment, [UInt8]) async throws -> T
    ) async throws -> Response {
        try await answer(request, context) { app, environment, body in
            try jsonResponse(try await call(app, environment, body), context: context)
        }
    }

    /// A call answered with a status and no body (Apple's 200 or 202 for PUTs and DELETEs).
    func empty(
        _ request: Request,
        _ context: SimulatorRequestContext,
        status: HTTPResponse.Status = .ok,
        _ call: @escaping (SimApp, AppStoreEnvironment, [UInt8]) async throws -> Void
    ) async throws -> Response {
        try await answer(request, context) { app, environment, body in
            try await call(app, environment, body)
            return Response(status: status)
        }
    }

    /// Apple's 429: `RateLimitExceededError`, and `Retry-After` saying when the next request may go, as a UNIX time in
    /// milliseconds (Apple's "Identifying rate limits"): the rule's end when it has one, else a second from now.
    private func rateLimited(until: Int64?, _ context: SimulatorRequestContext) throws -> Response {
        let failure = ServerAPIFailure(.rateLimitExceeded)
        var response = try jsonResponse(failure.error, status: .init(code: failure.status), context: context)
        response.headers[.retryAfter] = String(until ?? Date().millisecondsSince1970 + 1000)
        return response
    }

    private func answer(
        _ request: Request,
        _ context: SimulatorRequestContext,
        _ call: (SimApp, AppStoreEnvironment, [UInt8]) async throws -> Response
    ) async throws -> Response {
        let environment = try environment(context)
        var request = request
        do {
            let body = try await request.collectBody(upTo: Self.bodyLimit)
            if let rule = try await applyFault(simulator, environment, .serverAPI) {
                if rule.outage != nil { return Response(status: .serviceUnavailable) }
                if rule.rateLimited == true { return try rateLimited(until: rule.untilMilliseconds, context) }
            }
            let app = try await simulator.serverAPI.authenticate(authorization: request.headers[.authorization])
            return try await call(app, environment, Array(body.readableBytesView))
        } catch let failure as ServerAPIFailure {
            guard let error = failure.error else { return Response(status: .init(code: failure.status)) }
            return try jsonResponse(error, status: .init(code: failure.status), context: context)
        } catch is CancellationError {
            throw CancellationError()
        } catch is NIOTooManyBytesError {
            // A body over `bodyLimit` (collectBody throws NIO's error, not an HTTPError): Apple's 400, not a 500.
            return try jsonResponse(APIError(.generalBadRequest), status: .badRequest, context: context)
        } catch {
            simulator.logger.error("App Store Server API request failed: \(error)")
            return try jsonResponse(APIError(.generalInternal), status: .internalServerError, context: context)
        }
    }
}

/// A path parameter of a route, percent-decoded (`a%20b` is `a b`): clients encode what they put in a path.
func parameter(_ context: SimulatorRequestContext, _ name: String) throws -> String {
    let raw = try context.parameters.require(name)
    return raw.removingPercentEncoding ?? raw
}
