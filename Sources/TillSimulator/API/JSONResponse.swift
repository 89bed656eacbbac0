import Foundation
import Hummingbird
import NIOCore
import TillFormats

/// Encodes a value with the context's encoder as a JSON response.
func jsonResponse<T: Encodable>(
    _ value: T,
    status: HTTPResponse.Status = .ok,
    context: some RequestContext
) throws -> Response {
    let data = try TillFormatsJSON.encoder.encode(value)
    var response = Response(status: status, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    response.headers[.contentType] = "application/json"
    return response
}

enum TillFormatsJSON {
    static let encoder = AppleJSON.makeEncoder()
    static let decoder = AppleJSON.makeDecoder()
}

/// Decodes a JSON request body, answering 400 with a stable code when it is not what the route takes.
func decodeBody<T: Decodable>(_ type: T.Type, from request: Request, context: some RequestContext, limit: Int = 1 << 20)
    async throws -> T
{
    var request = request
    let buffer: ByteBuffer
    do {
        buffer = try await request.collectBody(upTo: limit)
    } catch {
        throw SimulatorError(.contentTooLarge, "bodyTooLarge", "the request body is larger than \(limit) bytes")
    }
    do {
        return try TillFormatsJSON.decoder.decode(T.self, from: Data(buffer.readableBytesView))
    } catch let error as DecodingError {
        throw SimulatorError.badRequest("invalidBody", "the request body is not a valid \(T.self): \(describe(error))")
    } catch {
        throw SimulatorError.badRequest("invalidBody", "the request body is not JSON")
    }
}

/// What is wrong with a request body, in a few words.
func describe(_ error: DecodingError) -> String {
    switch error {
    case .keyNotFound(let key, _): "missing \(key.stringValue)"
    case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
        (context.codingPath.map(\.stringValue).joined(separator: ".") + " " + context.debugDescription)
            .trimmingCharacters(in: .whitespaces)
    @unknown default: "\(error)"
    }
}
