import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// One HTTP service the client talks to: a base URL, an optional bearer token and a time limit per request.
///
/// Every failure comes out as a ``TillClientError``: no connection or a broken one is `unreachable`, no answer
/// in time `timedOut`, a 5xx `serverFault`, a 4xx `refused` with the server's `{"error":{"code","message"}}`.
struct HTTPService: Sendable {
    struct Reply: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: [UInt8]

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            do {
                return try JSONDecoder().decode(T.self, from: Data(body))
            } catch {
                throw TillClientError(
                    .invalidResponse,
                    status: status,
                    message: "the answer is not a valid \(T.self): \(error)"
                )
            }
        }
    }

    /// Without a trailing slash.
    let baseURL: String
    let bearer: String?
    let timeout: Duration
    let client: HTTPClient

    init(baseURL: String, bearer: String?, timeout: Duration, client: HTTPClient) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        self.bearer = bearer
        self.timeout = timeout
        self.client = client
    }

    /// The absolute URL of `path` (which starts with `/`); an absolute `path` is kept as it is.
    func url(_ path: String) -> String {
        path.hasPrefix("http://") || path.hasPrefix("https://") ? path : baseURL + path
    }

    func get(_ path: String, headers: [(String, String)] = []) async throws -> Reply {
        try await send(.GET, path, body: nil, headers: headers)
    }

    func post(_ path: String, json: some Encodable, headers: [(String, String)] = []) async throws -> Reply {
        try await send(.POST, path, json: json, headers: headers)
    }

    func send(
        _ method: HTTPMethod,
        _ path: String,
        json: some Encodable,
        headers: [(String, String)] = [],
        timeout: Duration? = nil
    ) async throws -> Reply {
        let body: Data
        do {
            body = try JSONEncoder().encode(json)
        } catch {
            throw TillClientError(.invalidResponse, message: "could not encode the request: \(error)")
        }
        return try await send(method, path, body: Array(body), headers: headers, timeout: timeout)
    }

    /// Sends a request and reads its whole answer (at most `maxBody` bytes); answers other than 2xx and 304 throw.
    func send(
        _ method: HTTPMethod,
        _ path: String,
        body: [UInt8]?,
        headers: [(String, String)] = [],
        timeout: Duration? = nil,
        maxBody: Int = 8 << 20
    ) async throws -> Reply {
        let reply = try await perform(request(method, path, body: body, headers: headers), timeout: timeout) {
            response in
            let bytes = try await response.body.collect(upTo: maxBody)
            return Reply(
                status: Int(response.status.code),
                headers: response.headers,
                body: Array(bytes.readableBytesView)
            )
        }
        guard (200..<300).contains(reply.status) || reply.status == 304 else { throw Self.failure(reply) }
        return reply
    }

    func request(_ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, headers: [(String, String)] = [])
        -> HTTPClientRequest
    {
        var request = HTTPClientRequest(url: url(path))
        request.method = method
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        request.headers.add(name: "Accept", value: "application/json")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        return request
    }

    /// Executes `request` and hands the response to `read`, mapping transport errors to ``TillClientError``.
    /// A cancelled task gets `CancellationError`.
    func perform<T: Sendable>(
        _ request: HTTPClientRequest,
        timeout: Duration? = nil,
        read: (HTTPClientResponse) async throws -> T
    ) async throws -> T {
        let limit = timeout ?? self.timeout
        do {
            let response = try await client.execute(request, timeout: limit.timeAmount)
            return try await read(response)
        } catch let error as TillClientError {
            throw error
        } catch {
            if Task.isCancelled || error is CancellationError { throw CancellationError() }
            throw Self.transportFailure(error, url: request.url)
        }
    }

    static func transportFailure(_ error: any Error, url: String) -> TillClientError {
        if let error = error as? HTTPClientError,
            [.deadlineExceeded, .readTimeout, .writeTimeout, .connectTimeout, .getConnectionFromPoolTimeout]
                .contains(error)
        {
            return TillClientError(.timedOut, message: "no answer from \(url) in time (\(error))")
        }
        return TillClientError(.unreachable, message: "could not reach \(url): \(error)")
    }

    /// The error a non-2xx answer stands for, with the server's code and message when it sent the usual body.
    static func failure(_ reply: Reply) -> TillClientError {
        struct Body: Decodable {
            struct Detail: Decodable {
                var code: String
                var message: String?
            }
            var error: Detail
        }
        let detail = try? JSONDecoder().decode(Body.self, from: Data(reply.body)).error
        let text = String(decoding: reply.body.prefix(200), as: UTF8.self)
        return TillClientError(
            reply.status >= 500 ? .serverFault : .refused,
            status: reply.status,
            code: detail?.code,
            message: detail?.message ?? (text.isEmpty ? "HTTP \(reply.status)" : text)
        )
    }
}

extension Duration {
    /// The same span as NIO's `TimeAmount`.
    var timeAmount: TimeAmount {
        let (seconds, attoseconds) = components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
