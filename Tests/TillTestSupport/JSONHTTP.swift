import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// An HTTP answer, with its body read as JSON when it is.
public struct JSONReply: Sendable, CustomStringConvertible {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public var text: String { String(decoding: body, as: UTF8.self) }
    public var json: Any? { try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]) }
    public var object: [String: Any] { json as? [String: Any] ?? [:] }
    public var array: [[String: Any]] { json as? [[String: Any]] ?? [] }
    /// The stable code of an error answer (`{"error":{"code":…}}`).
    public var code: String? { (object["error"] as? [String: Any])?["code"] as? String }

    public var description: String { "HTTP \(status) \(text.prefix(600))" }

    /// Decodes the body as `type`.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(body))
    }
}

/// JSON over HTTP to one base URL, as curl would send it: what the docs' examples do, from a test.
public struct JSONHTTP: Sendable {
    public let base: String
    /// Sent as `Authorization: Bearer` when set.
    public let token: String?
    let client: HTTPClient

    public init(base: String, token: String? = nil, client: HTTPClient = .shared) {
        self.base = base
        self.token = token
        self.client = client
    }

    /// The same base with another bearer token.
    public func with(token: String?) -> JSONHTTP { JSONHTTP(base: base, token: token, client: client) }

    /// Sends `body` (a JSON object or array, or a raw string sent as it is) and reads the whole answer.
    public func send(
        _ method: HTTPMethod,
        _ path: String,
        _ body: Any? = nil,
        headers extra: [(String, String)] = [],
        timeout: Duration = .seconds(60)
    ) async throws -> JSONReply {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in extra { request.headers.add(name: name, value: value) }
        if let body {
            let bytes: [UInt8] =
                if let text = body as? String { Array(text.utf8) } else {
                    Array(try JSONSerialization.data(withJSONObject: body))
                }
            if !request.headers.contains(name: "Content-Type") {
                request.headers.add(name: "Content-Type", value: "application/json")
            }
            request.body = .bytes(ByteBuffer(bytes: bytes))
        }
        let response = try await client.execute(request, timeout: .seconds(timeout.components.seconds))
        let collected = try await response.body.collect(upTo: 64 << 20)
        return JSONReply(
            status: Int(response.status.code),
            headers: response.headers,
            body: Array(collected.readableBytesView)
        )
    }

    public func get(_ path: String) async throws -> JSONReply { try await send(.GET, path) }
    public func post(_ path: String, _ body: Any? = nil) async throws -> JSONReply {
        try await send(.POST, path, body)
    }
}
