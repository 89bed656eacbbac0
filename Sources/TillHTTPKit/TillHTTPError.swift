import HTTPTypes
import Hummingbird
import NIOCore
import TillCore

/// A request refused by the server or the simulator: the HTTP status, a stable machine `code` to branch on, and a
/// message for people. Written as `{"error":{"code":"…","message":"…"}}`, the one error shape of both APIs.
public struct TillHTTPError: Error, Sendable, Hashable, CustomStringConvertible {
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

    public static func badRequest(_ code: String, _ message: String) -> TillHTTPError {
        TillHTTPError(.badRequest, code, message)
    }

    /// 404 with the code `<what>NotFound` (`appNotFound`, `productNotFound`, …); a `what` of several words makes
    /// one identifier (`offer code` → `offerCodeNotFound`), so that the code stays a stable token.
    public static func notFound(_ what: String, _ id: String) -> TillHTTPError {
        let words = what.split(whereSeparator: { !$0.isLetter && !$0.isNumber })
        let name = words.enumerated().map { index, word in
            index == 0 ? word.prefix(1).lowercased() + word.dropFirst() : word.prefix(1).uppercased() + word.dropFirst()
        }.joined()
        return TillHTTPError(.notFound, "\(name)NotFound", "no \(what) \(id)")
    }

    public static func conflict(_ code: String, _ message: String) -> TillHTTPError {
        TillHTTPError(.conflict, code, message)
    }

    public static func unprocessable(_ code: String, _ message: String) -> TillHTTPError {
        TillHTTPError(.unprocessableContent, code, message)
    }

    /// The JSON body of the answer (slashes left as they are, so paths in messages read as paths).
    public var body: String {
        var writer = JSONWriter(capacity: 64 + message.utf8.count)
        writer.object { w in
            w.key("error")
            w.object { w in
                w.field("code", code)
                w.field("message", message)
            }
        }
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}

extension TillHTTPError: HTTPResponseError {
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
        response.headers[.contentType] = "application/json"
        return response
    }
}
