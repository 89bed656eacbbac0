import Foundation
import HTTPTypes
import OpenAPIRuntime
import OpenAPIURLSession

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Calls a client that swift-openapi-generator made (the server's, ``TillServerClient``; the simulator's device API,
/// ``SimulatorStorefront``) within a deadline, with every failure as a ``TillClientError``: the one piece both use.
struct GeneratedCalls<Client: Sendable>: Sendable {
    /// Nil when the base URL is not an http(s) URL: every call then fails `unreachable`, saying so.
    let client: Client?
    /// Without a trailing slash.
    let baseURL: String
    /// Seconds.
    let timeout: TimeInterval

    /// - Parameter make: the generated client for a server URL, with the transport and middleware given.
    init(
        baseURL: String,
        bearer: String?,
        timeout: TimeInterval,
        session: URLSession,
        make: (URL, any ClientTransport, [any ClientMiddleware]) -> Client
    ) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        self.timeout = timeout
        client = URL(string: base).flatMap { url in
            ["http", "https"].contains(url.scheme?.lowercased() ?? "")
                ? make(
                    url,
                    URLSessionTransport(configuration: .init(session: session)),
                    [AnswerMiddleware(bearer: bearer)]
                ) : nil
        }
    }

    /// Calls the generated client within the deadline (`timeout`, or the default), with every failure as a
    /// ``TillClientError``.
    func call<Output: Sendable>(
        timeout: TimeInterval? = nil,
        _ operation: @escaping @Sendable (Client) async throws -> Output
    ) async throws -> Output {
        guard let client else {
            throw TillClientError(.unreachable, message: "could not reach \(baseURL): not an http(s) URL")
        }
        let base = URL(string: baseURL)
        return try await HTTPService.withDeadline(timeout ?? self.timeout, url: base) {
            do {
                return try await operation(client)
            } catch let error as ClientError {
                // The runtime wraps what the middleware and the transport throw.
                if let answer = error.underlyingError as? TillClientError { throw answer }
                if error.underlyingError is CancellationError || Task.isCancelled { throw CancellationError() }
                if error.response != nil {
                    throw TillClientError(
                        .invalidResponse,
                        message: "the answer could not be read: \(error.underlyingError)"
                    )
                }
                // The request's URL without its query: which endpoint could not be reached.
                let endpoint = error.request?.path.flatMap { path in
                    URL(string: baseURL + (path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""))
                }
                throw HTTPService.transportFailure(error.underlyingError, url: endpoint ?? base)
            }
        }
    }

    /// A documented answer the call does not expect (the middleware turns error statuses into errors first).
    static func unexpected(_ output: some Sendable) -> TillClientError {
        TillClientError(.invalidResponse, message: "an unexpected answer: \(output)")
    }

    /// The body of an answer, as the contract says it is.
    static func read<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            throw TillClientError(.invalidResponse, message: "the answer is not what the contract says: \(error)")
        }
    }
}

/// Sends the bearer token (when there is one) with every request, and turns every answer that is not 2xx or 304
/// into the ``TillClientError`` its status and `{"error":{"code","message"}}` body stand for, before the generated
/// code decodes it: each call then handles only its successful answers.
struct AnswerMiddleware: ClientMiddleware {
    let bearer: String?

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        if let bearer { request.headerFields[.authorization] = "Bearer \(bearer)" }
        // The runtime writes header parameters URI-encoded (the quotes of an entity tag as %22), which no server
        // reads as an entity tag. Decoding exactly inverts that encoding, whatever the tag holds.
        if let tags = request.headerFields[.ifNoneMatch], let decoded = tags.removingPercentEncoding {
            request.headerFields[.ifNoneMatch] = decoded
        }
        let (response, responseBody) = try await next(request, body, baseURL)
        let status = response.status.code
        guard !(200..<300).contains(status) && status != 304 else { return (response, responseBody) }
        var bytes: [UInt8] = []
        if let responseBody { bytes = try await [UInt8](collecting: responseBody, upTo: 64 * 1024) }
        throw HTTPService.failure(status: status, body: bytes)
    }
}
