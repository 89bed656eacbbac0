import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import TillClient

/// What `till demo` and `till shop` send where an operator would use curl: the admin APIs (the simulator's, the
/// server's) and Apple's endpoints on the simulator.
struct AdminHTTP: Sendable {
    /// An answer other than 2xx.
    struct Failure: Error, CustomStringConvertible {
        var method: String
        var url: String
        var status: Int
        var body: String

        var description: String { "\(method) \(url) answered \(status): \(body.prefix(300))" }
    }

    /// Without a trailing slash.
    let baseURL: String
    /// Sent as `Authorization: Bearer`, when set.
    let token: String?
    var client: HTTPClient = .shared

    init(baseURL: String, token: String? = nil) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        self.token = token
    }

    /// Sends `body` and answers the status and the whole body; throws ``Failure`` for anything but 2xx.
    @discardableResult
    func send(
        _ method: HTTPMethod,
        _ path: String,
        body: [UInt8]? = nil,
        contentType: String = "application/json",
        timeout: Duration = .seconds(30)
    ) async throws -> (status: Int, body: [UInt8]) {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let body {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response = try await client.execute(request, timeout: .seconds(timeout.components.seconds))
        let bytes = Array(try await response.body.collect(upTo: 16 << 20).readableBytesView)
        let status = Int(response.status.code)
        guard (200..<300).contains(status) else {
            throw Failure(
                method: method.rawValue,
                url: baseURL + path,
                status: status,
                body: String(decoding: bytes, as: UTF8.self)
            )
        }
        return (status, bytes)
    }

    /// Sends `body` as JSON and decodes the answer.
    func json<Answer: Decodable>(
        _ method: HTTPMethod,
        _ path: String,
        _ body: (any Encodable)? = nil,
        as type: Answer.Type = Answer.self
    ) async throws -> Answer {
        let bytes = try body.map { Array(try JSONEncoder().encode($0)) }
        return try JSONDecoder().decode(Answer.self, from: Data(try await send(method, path, body: bytes).body))
    }
}
