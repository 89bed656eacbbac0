import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore

/// An answer of a router or server under test, with the readings the tests make of it.
public struct HTTPReply: Sendable {
    public var status: Int
    public var headers: HTTPFields
    public var body: [UInt8]

    public init(status: Int, headers: HTTPFields, body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public var data: Data { Data(body) }
    /// The body as JSON, when it is.
    public var json: Any? { try? JSONSerialization.jsonObject(with: data) }
    public var object: [String: Any] { json as? [String: Any] ?? [:] }
    public var array: [[String: Any]] { json as? [[String: Any]] ?? [] }
    /// The stable code of an error answer (`{"error":{"code":…}}`).
    public var code: String? { (object["error"] as? [String: Any])?["code"] as? String }
    public var message: String? { (object["error"] as? [String: Any])?["message"] as? String }

    public func decode<T: Decodable>(_ type: T.Type) throws -> T { try JSONDecoder().decode(T.self, from: data) }
}

extension TestClientProtocol {
    /// Sends one request through Hummingbird's test client: a JSON text or raw bytes as the body, the bearer
    /// `token` as `Authorization` when given.
    public func call(
        _ method: HTTPRequest.Method,
        _ path: String,
        json: String? = nil,
        bytes: [UInt8]? = nil,
        token: String? = nil,
        headers extra: HTTPFields = [:]
    ) async throws -> HTTPReply {
        var headers = extra
        if let token { headers[.authorization] = "Bearer \(token)" }
        let body = bytes.map { ByteBuffer(bytes: $0) } ?? json.map { ByteBuffer(string: $0) }
        return try await execute(uri: path, method: method, headers: headers, body: body) { response in
            HTTPReply(
                status: Int(response.status.code),
                headers: response.headers,
                body: Array(response.body.readableBytesView)
            )
        }
    }
}
