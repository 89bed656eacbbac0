import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// A request the server refuses: a stable machine code, a message, and the HTTP status.
public struct ServerError: Error, Sendable, CustomStringConvertible {
    public var status: HTTPResponse.Status
    public var code: String
    public var message: String
    /// Headers the answer carries besides its JSON body (`Allow` on a 405).
    public var headers: HTTPFields

    public init(_ status: HTTPResponse.Status, _ code: String, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public var description: String { "\(code): \(message)" }

    static func badRequest(_ code: String, _ message: String) -> ServerError { ServerError(.badRequest, code, message) }
    static func notFound(_ what: String, _ id: String) -> ServerError {
        ServerError(.notFound, "\(what)NotFound", "no \(what) \(id)")
    }
    static func conflict(_ code: String, _ message: String) -> ServerError { ServerError(.conflict, code, message) }
    static func unprocessable(_ code: String, _ message: String) -> ServerError {
        ServerError(.unprocessableContent, code, message)
    }
}

extension ServerError: HTTPResponseError {
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes  // paths in messages read as paths
        let body = try encoder.encode(["error": ["code": code, "message": message]])
        var response = Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
        response.headers[.contentType] = "application/json"
        return response
    }
}
