import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One HTTP service the client talks to without a contract: the simulator's StoreKit endpoints and content
/// downloads (streamed to disk, which the generated client cannot do on Linux). A base URL, an optional bearer token
/// and a deadline per request; the server's JSON API goes through the generated client (``TillServerClient``).
///
/// Every failure comes out as a ``TillClientError``: no connection or a broken one is `unreachable`, no answer
/// in time `timedOut`, a 5xx `serverFault`, a 4xx `refused` with the server's `{"error":{"code","message"}}`.
struct HTTPService: Sendable {
    struct Reply: Sendable {
        var status: Int
        /// Header names in lower case.
        var headers: [String: String]
        var body: [UInt8]

        func header(_ name: String) -> String? { headers[name.lowercased()] }

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
    /// Seconds.
    let timeout: TimeInterval
    let session: URLSession

    init(baseURL: String, bearer: String?, timeout: TimeInterval, session: URLSession) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        self.bearer = bearer
        self.timeout = timeout
        self.session = session
    }

    /// The absolute URL of `path` (which starts with `/`); an absolute `path` is kept as it is.
    func url(_ path: String) -> String {
        path.hasPrefix("http://") || path.hasPrefix("https://") ? path : baseURL + path
    }

    func get(_ path: String, headers: [(String, String)] = []) async throws -> Reply {
        try await send("GET", path, body: nil, headers: headers)
    }

    func post(_ path: String, json: some Encodable, headers: [(String, String)] = []) async throws -> Reply {
        try await send("POST", path, json: json, headers: headers)
    }

    func send(
        _ method: String,
        _ path: String,
        json: some Encodable,
        headers: [(String, String)] = [],
        timeout: TimeInterval? = nil
    ) async throws -> Reply {
        let body: Data
        do {
            body = try JSONEncoder().encode(json)
        } catch {
            throw TillClientError(.invalidResponse, message: "could not encode the request: \(error)")
        }
        return try await send(method, path, body: Array(body), headers: headers, timeout: timeout)
    }

    /// Sends a request and reads its whole answer; answers other than 2xx and 304 throw.
    func send(
        _ method: String,
        _ path: String,
        body: [UInt8]?,
        headers: [(String, String)] = [],
        timeout: TimeInterval? = nil
    ) async throws -> Reply {
        let request = try request(method, path, body: body, headers: headers)
        let session = self.session
        let (data, response) = try await Self.withDeadline(timeout ?? self.timeout, url: request.url) {
            try await session.data(for: request)
        }
        let reply = try Self.reply(response, body: Array(data), url: request.url)
        guard (200..<300).contains(reply.status) || reply.status == 304 else { throw Self.failure(reply) }
        return reply
    }

    func request(_ method: String, _ path: String, body: [UInt8]? = nil, headers: [(String, String)] = []) throws
        -> URLRequest
    {
        guard let url = URL(string: url(path)) else {
            throw TillClientError(.invalidResponse, message: "not a URL: \(self.url(path))")
        }
        var request = URLRequest(url: url)
        request.httpMethod = method
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(body)
        }
        return request
    }

    /// A response whose body arrives in chunks, for downloads written to disk as they come.
    struct StreamedResponse: Sendable {
        var status: Int
        var headers: [String: String]
        var body: AsyncThrowingStream<Data, any Error>

        func header(_ name: String) -> String? { headers[name.lowercased()] }

        /// The first `limit` bytes of the body (an error answer's JSON).
        func collect(upTo limit: Int) async throws -> [UInt8] {
            var bytes: [UInt8] = []
            for try await chunk in body {
                bytes += chunk.prefix(limit - bytes.count)
                if bytes.count >= limit { break }
            }
            return bytes
        }
    }

    /// Starts `request` and answers once its status and headers are in (within the service's deadline); the body
    /// then streams, failing `timedOut` if no byte comes for as long as that deadline. Ending the body's iteration
    /// early, or cancelling the task that reads it, cancels the transfer.
    func stream(_ request: URLRequest) async throws -> StreamedResponse {
        var request = request
        request.timeoutInterval = max(1, timeout.rounded(.down))
        let (body, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
        let delegate = StreamingDelegate(continuation)
        let session = URLSession(configuration: self.session.configuration, delegate: delegate, delegateQueue: nil)
        let task = session.dataTask(with: request)
        continuation.onTermination = { _ in
            task.cancel()
            session.finishTasksAndInvalidate()
        }
        let response: URLResponse
        do {
            response = try await Self.withDeadline(timeout, url: request.url) {
                try await delegate.response(of: task)
            }
        } catch {
            continuation.finish()
            throw error
        }
        let head = try Self.reply(response, body: [], url: request.url)
        return StreamedResponse(status: head.status, headers: head.headers, body: body)
    }

    /// Runs `body`, or throws `timedOut` if it takes longer than `limit` seconds (and cancels it).
    static func withDeadline<T: Sendable>(
        _ limit: TimeInterval,
        url: URL?,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        do {
            return try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask { try await body() }
                group.addTask {
                    try await Task.sleep(nanoseconds: UInt64(max(limit, 0) * 1_000_000_000))
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let value = first else {
                    throw TillClientError(
                        .timedOut,
                        message: "no answer from \(url?.absoluteString ?? "the server") in \(limit) seconds"
                    )
                }
                return value
            }
        } catch let error as TillClientError {
            throw error
        } catch {
            if Task.isCancelled || error is CancellationError { throw CancellationError() }
            throw transportFailure(error, url: url)
        }
    }

    static func reply(_ response: URLResponse, body: [UInt8], url: URL?) throws -> Reply {
        guard let http = response as? HTTPURLResponse else {
            throw TillClientError(.invalidResponse, message: "not an HTTP answer from \(url?.absoluteString ?? "?")")
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return Reply(status: http.statusCode, headers: headers, body: body)
    }

    static func transportFailure(_ error: any Error, url: URL?) -> TillClientError {
        if let error = error as? TillClientError { return error }
        let where_ = url?.absoluteString ?? "the server"
        if let error = error as? URLError, error.code == .timedOut {
            return TillClientError(
                .timedOut,
                message: "no answer from \(where_) in time (\(error.localizedDescription))"
            )
        }
        if let error = error as? URLError {
            return TillClientError(.unreachable, message: "could not reach \(where_): \(describe(error))")
        }
        return TillClientError(.unreachable, message: "could not reach \(where_): \(error)")
    }

    /// What kept a request from the server, in a few words. A `URLError` printed whole is Foundation's NSError dump
    /// (`Error Domain=NSURLErrorDomain Code=-1004 "(null)"UserInfo={…}` on Linux, some 600 characters).
    static func describe(_ error: URLError) -> String {
        switch error.code {
        case .cannotConnectToHost: "connection refused (is the server running there?)"
        case .cannotFindHost, .dnsLookupFailed: "the host name is not known"
        case .networkConnectionLost: "the connection was lost"
        case .notConnectedToInternet: "no network connection"
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
            .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot, .clientCertificateRejected:
            "the TLS connection failed (\(error.localizedDescription))"
        case .cancelled: "the request was cancelled"
        default: "URLError \(error.code.rawValue)"
        }
    }

    /// The error a non-2xx answer stands for, with the server's code and message when it sent the usual body.
    static func failure(_ reply: Reply) -> TillClientError {
        failure(status: reply.status, body: reply.body)
    }

    static func failure(status: Int, body: [UInt8]) -> TillClientError {
        struct Body: Decodable {
            struct Detail: Decodable {
                var code: String
                var message: String?
            }
            var error: Detail
        }
        let detail = try? JSONDecoder().decode(Body.self, from: Data(body)).error
        let text = String(decoding: body.prefix(200), as: UTF8.self)
        return TillClientError(
            status >= 500 ? .serverFault : .refused,
            status: status,
            code: detail?.code,
            message: detail?.message ?? (text.isEmpty ? "HTTP \(status)" : text)
        )
    }
}

/// Hands a data task's response to its caller and its body chunks to an async stream, in the order URLSession
/// delivers them.
final class StreamingDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private let body: AsyncThrowingStream<Data, any Error>.Continuation
    private let waiting = Locked<CheckedContinuation<URLResponse, any Error>?>(nil)

    init(_ body: AsyncThrowingStream<Data, any Error>.Continuation) {
        self.body = body
    }

    /// Starts `task` and returns its response (status and headers) when it comes.
    func response(of task: URLSessionDataTask) async throws -> URLResponse {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                waiting.withLock { $0 = continuation }
                task.resume()
            }
        } onCancel: {
            task.cancel()
        }
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        waiting.withLock { $0.take() }?.resume(returning: response)
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        body.yield(data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        // A task that ends before any response (refused connection, cancelled) fails the caller waiting for one.
        waiting.withLock { $0.take() }?.resume(throwing: error ?? URLError(.badServerResponse))
        if let error { body.finish(throwing: error) } else { body.finish() }
    }
}
