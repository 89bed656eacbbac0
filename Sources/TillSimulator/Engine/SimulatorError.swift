import Foundation
import HTTPTypes
import Hummingbird

/// A request the simulator refuses: a stable machine code, a message, and the HTTP status.
public struct SimulatorError: Error, Sendable, CustomStringConvertible {
    public var code: String
    public var message: String
    public var status: HTTPResponse.Status

    public init(_ status: HTTPResponse.Status, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    static func notFound(_ what: String, _ id: String) -> SimulatorError {
        SimulatorError(.notFound, "\(what)NotFound", "no \(what) \(id)")
    }

    static func badRequest(_ code: String, _ message: String) -> SimulatorError {
        SimulatorError(.badRequest, code, message)
    }

    static func conflict(_ code: String, _ message: String) -> SimulatorError {
        SimulatorError(.conflict, code, message)
    }
}

extension SimulatorError: HTTPResponseError {
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = #"{"error":{"code":"\#(code)","message":\#(jsonString(message))}}"#
        var response = Response(status: status, body: .init(byteBuffer: ByteBuffer(string: body)))
        response.headers[.contentType] = "application/json"
        return response
    }
}

/// A JSON string literal for `text`.
func jsonString(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case let c where c.value < 0x20: out += String(format: "\\u%04x", c.value)
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}
